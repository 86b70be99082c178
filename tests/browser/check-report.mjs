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

import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { freshProfile, launch } from './chromium.mjs';

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

/// In the page: what each expected chart looks like.
function inspectCharts(names) {
  return names.map((name) => {
    const found = document.querySelectorAll(`svg[data-chart="${name}"]`);
    if (found.length !== 1) {
      return { name, problems: [`${found.length} elements match svg[data-chart="${name}"]`] };
    }
    const svg = found[0];
    const problems = [];
    const box = svg.getBoundingClientRect();
    const style = getComputedStyle(svg);
    if (box.width < 50 || box.height < 50 || style.display === 'none' || style.visibility !== 'visible') {
      problems.push(`not visible (${box.width}x${box.height}, display ${style.display}, visibility ${style.visibility})`);
    }
    const title = svg.querySelector(':scope > title');
    if (!title || !title.textContent.trim()) {
      problems.push('no <title>');
    }
    if (svg.dataset.empty === 'true') {
      problems.push(`drawn as "no data": ${svg.textContent.trim()}`);
    }
    const marks = [...svg.querySelectorAll('.mark')].filter((mark) => {
      const bbox = mark.getBBox();
      return bbox.width > 0 || bbox.height > 0;
    });
    if (marks.length === 0) {
      problems.push('no drawn marks (lines, dots or bars of non-zero size)');
    }
    return { name, problems, marks: marks.length, size: `${Math.round(box.width)}x${Math.round(box.height)}` };
  });
}

async function main() {
  const { report, screenshot, charts, results } = parseArgs(process.argv.slice(2));
  const reportUrl = pathToFileURL(report).href;
  const failures = [];
  const userDataDir = freshProfile();
  let context;
  try {
    context = await launch(userDataDir, TIMEOUT_MS);
    // Only the report itself may load; anything else is a leak.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url === reportUrl) {
        return route.continue();
      }
      failures.push(`request leaving the file: ${url}`);
      return route.abort('blockedbyclient');
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') {
        failures.push(`console error: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => failures.push(`page error: ${error.message}`));
    page.on('request', (request) => {
      if (request.url() !== reportUrl && !request.url().startsWith('data:')) {
        failures.push(`request: ${request.url()}`);
      }
    });

    const response = await page.goto(reportUrl, { waitUntil: 'load', timeout: TIMEOUT_MS });
    if (!response || !response.ok()) {
      failures.push(`loading ${reportUrl} failed (${response ? response.status() : 'no response'})`);
    }
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
    for (const chart of await page.evaluate(inspectCharts, charts)) {
      if (chart.problems.length === 0) {
        console.log(`chart ${chart.name}: ok (${chart.size}, ${chart.marks} marks)`);
      } else {
        failures.push(`chart ${chart.name}: ${chart.problems.join('; ')}`);
      }
    }
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
  } catch (error) {
    failures.push(`browser: ${error.stack ?? error}`);
  } finally {
    if (context) {
      await context.close();
    }
    rmSync(userDataDir, { recursive: true, force: true });
  }
  if (failures.length > 0) {
    for (const failure of failures) {
      console.error(`FAIL ${failure}`);
    }
    process.exit(1);
  }
  console.log('all checks passed');
}

await main();
