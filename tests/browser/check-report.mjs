// Opens a report written by `wsbench report --html` in a real browser (the system Chromium,
// driven by the pinned playwright-core) and checks what a reader would see: every expected
// chart (`svg[data-chart=NAME]`) is present, visible and has drawn marks; the page logs no
// console errors and throws no page errors; and it makes no request beyond its own file
// (every request is intercepted, anything else is aborted and fails the check); no two
// results share a colour (the summary swatches, the throughput lines, the bars of every
// comparison chart); and the bars of every comparison chart are drawn best first (read from
// their on-screen positions and `data-value`s). Then it saves a full-page screenshot. Run by
// crates/wsbench/tests/browser.rs.
//
// usage: node check-report.mjs REPORT.html SCREENSHOT.png [--charts NAME,NAME,...] [--results N]
// Prints one line per check and "all checks passed" on success; exits 1 on any failure.

import { resolve } from 'node:path';

import { checkCharts, checkPage } from './page-checks.mjs';

// A report of two or more results has all of these.
const DEFAULT_CHARTS = [
  'rate-over-time',
  'latency-over-time',
  'latency-spectrum',
  'connect-time',
  'server-rss',
  'server-cpu',
  'compare-echoes-per-sec',
  'compare-p99-latency',
  'compare-rss-peak',
  'compare-echoes-per-cpu-second',
];
const TIMEOUT_MS = 60_000;

function parseArgs(argv) {
  const positional = [];
  let charts = DEFAULT_CHARTS;
  let results = 0;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--charts') {
      charts = (argv[++i] ?? '').split(',').filter(Boolean);
    } else if (argv[i] === '--results') {
      results = Number(argv[++i]);
    } else {
      positional.push(argv[i]);
    }
  }
  if (positional.length !== 2 || charts.length === 0) {
    console.error('usage: node check-report.mjs REPORT.html SCREENSHOT.png [--charts NAME,NAME,...] [--results N]');
    process.exit(2);
  }
  return { report: resolve(positional[0]), screenshot: resolve(positional[1]), charts, results };
}

/// In the page: the colour of each result in each place that shows one mark per result, as
/// the browser computed it; every list must hold `results` different colours.
function inspectColours(results) {
  const problems = [];
  const places = {
    'summary swatches': [...document.querySelectorAll('table.summary .swatch')].map(
      (swatch) => getComputedStyle(swatch).backgroundColor,
    ),
    'throughput lines': [...document.querySelectorAll('svg[data-chart="rate-over-time"] polyline.mark')].map(
      (line) => getComputedStyle(line).stroke,
    ),
  };
  for (const svg of document.querySelectorAll('svg[data-order]')) {
    places[`${svg.dataset.chart} bars`] = [...svg.querySelectorAll('g.bar rect.mark')].map(
      (bar) => getComputedStyle(bar).fill,
    );
  }
  const counts = {};
  for (const [place, colours] of Object.entries(places)) {
    const distinct = new Set(colours);
    counts[place] = distinct.size;
    if (distinct.size !== colours.length) {
      const seen = colours.filter((colour, i) => colours.indexOf(colour) !== i);
      problems.push(`${place}: ${colours.length} marks but ${distinct.size} colours (repeated: ${[...new Set(seen)].join(', ')})`);
    }
    if (results > 0 && colours.length !== results) {
      problems.push(`${place}: ${colours.length} marks, expected one per result (${results})`);
    }
  }
  return { problems, counts };
}

/// In the page: each comparison chart's bars, top to bottom on screen, must be in its
/// `data-order` (descending: best = highest first), with bars without a value last.
function inspectOrder() {
  const problems = [];
  const charts = [];
  for (const svg of document.querySelectorAll('svg[data-order]')) {
    const bars = [...svg.querySelectorAll('g.bar')]
      .map((bar) => ({ y: bar.getBoundingClientRect().top, value: bar.dataset.value }))
      .sort((a, b) => a.y - b.y);
    const values = bars.filter((bar) => bar.value !== undefined).map((bar) => Number(bar.value));
    const firstMissing = bars.findIndex((bar) => bar.value === undefined);
    if (firstMissing !== -1 && bars.slice(firstMissing).some((bar) => bar.value !== undefined)) {
      problems.push(`${svg.dataset.chart}: a bar without a value is drawn above one with a value`);
    }
    const descending = svg.dataset.order === 'descending';
    for (let i = 1; i < values.length; i++) {
      if (descending ? values[i] > values[i - 1] : values[i] < values[i - 1]) {
        problems.push(`${svg.dataset.chart}: ${values[i]} is drawn below ${values[i - 1]} (${svg.dataset.order})`);
      }
    }
    charts.push(`${svg.dataset.chart} ${svg.dataset.order} (${values.length} bars)`);
  }
  return { problems, charts };
}

async function main() {
  const { report, screenshot, charts, results } = parseArgs(process.argv.slice(2));
  await checkPage(report, TIMEOUT_MS, async (page, failures) => {
    const title = await page.title();
    console.log(`page: ${title}`);
    if (!title.startsWith('wsbench report')) {
      failures.push(`unexpected page title: ${title}`);
    }
    const rows = await page.locator('table.summary tbody tr').count();
    console.log(`summary table: ${rows} rows`);
    if (rows === 0) {
      failures.push('the summary table has no rows');
    }
    await checkCharts(page, charts, failures);
    const colours = await page.evaluate(inspectColours, results);
    console.log(`colours: ${JSON.stringify(colours.counts)}`);
    failures.push(...colours.problems.map((problem) => `colours: ${problem}`));
    const order = await page.evaluate(inspectOrder);
    console.log(`bar order: ${order.charts.join(', ')}`);
    if (order.charts.length === 0 && charts.some((name) => name.startsWith('compare-'))) {
      failures.push('bar order: no comparison chart carries data-order');
    }
    failures.push(...order.problems.map((problem) => `bar order: ${problem}`));
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`screenshot: ${screenshot}`);
  });
}

await main();
