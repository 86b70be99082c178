// Opens a sweep page written by `wsbench sweep --html` (or `compare --sweep --html`, or
// `wsbench report --html` of sweep files) in a real browser (the system Chromium, driven
// by the pinned playwright-core) and checks what a reader would see: both curves
// (`sweep-rate`, `sweep-latency`) drawn with marks, the page loading nothing but
// itself and logging no error; one table of steps per sweep; one colour per sweep in the
// measured lines (as the browser computed them); and, when asked, at least N fitted USL
// curves drawn, N knee rings and N predicted peaks, each on screen inside its chart.
// Then it saves a full-page screenshot. Run by crates/wsbench/tests/browser.rs.
//
// usage: node check-sweep.mjs PAGE.html SCREENSHOT.png --sweeps N [--fits N] [--knees N] [--peaks N]
// Prints one line per check and "all checks passed" on success; exits 1 on any failure.

import { resolve } from 'node:path';

import { checkCharts, checkPage } from './page-checks.mjs';

const CHARTS = ['sweep-rate', 'sweep-latency'];
const TIMEOUT_MS = 60_000;

function parseArgs(argv) {
  const positional = [];
  const wanted = { sweeps: 0, fits: 0, knees: 0, peaks: 0 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i].startsWith('--') ? argv[i].slice(2) : null;
    if (flag && flag in wanted) {
      wanted[flag] = Number(argv[++i]);
    } else {
      positional.push(argv[i]);
    }
  }
  if (positional.length !== 2 || !(wanted.sweeps > 0)) {
    console.error('usage: node check-sweep.mjs PAGE.html SCREENSHOT.png --sweeps N [--fits N] [--knees N] [--peaks N]');
    process.exit(2);
  }
  return { page: resolve(positional[0]), screenshot: resolve(positional[1]), wanted };
}

/// In the page: the sweeps' tables, the measured lines' colours, and the fitted curves,
/// knees and peaks drawn (each inside its chart's box).
function inspectSweeps() {
  const rate = document.querySelector('svg[data-chart="sweep-rate"]');
  const latency = document.querySelector('svg[data-chart="sweep-latency"]');
  const inside = (mark, svg) => {
    const box = mark.getBoundingClientRect();
    const frame = svg.getBoundingClientRect();
    return box.width > 0 && box.left >= frame.left && box.right <= frame.right && box.top >= frame.top && box.bottom <= frame.bottom;
  };
  const series = [...(rate?.querySelectorAll('g.series') ?? [])];
  const measured = series.filter((g) => g.querySelector('title')?.textContent.endsWith(' measured'));
  const fits = series.filter((g) => g.querySelector('title')?.textContent.endsWith(' USL fit'));
  const drawn = (marks, svg) => marks.filter((mark) => inside(mark, svg)).length;
  return {
    tables: document.querySelectorAll('section.sweep table.summary').length,
    rows: document.querySelectorAll('section.sweep table.summary tbody tr').length,
    colours: measured.map((g) => getComputedStyle(g.querySelector('polyline.mark')).stroke),
    fits: drawn(fits.map((g) => g.querySelector('polyline.mark')), rate),
    knees: latency ? drawn([...latency.querySelectorAll('g.marker[data-marker="knee"] .mark')], latency) : 0,
    peaks: rate ? drawn([...rate.querySelectorAll('g.marker[data-marker="peak"] .mark')], rate) : 0,
  };
}

async function main() {
  const { page: pagePath, screenshot, wanted } = parseArgs(process.argv.slice(2));
  await checkPage(pagePath, TIMEOUT_MS, async (page, failures) => {
    const title = await page.title();
    console.log(`page: ${title}`);
    if (!title.startsWith('wsbench sweep')) {
      failures.push(`unexpected page title: ${title}`);
    }
    await checkCharts(page, CHARTS, failures);
    const seen = await page.evaluate(inspectSweeps);
    console.log(`sweeps: ${seen.tables} tables, ${seen.rows} steps; colours ${seen.colours.join(' ')}; fits ${seen.fits}, knees ${seen.knees}, peaks ${seen.peaks}`);
    if (seen.tables !== wanted.sweeps || seen.rows === 0) {
      failures.push(`${seen.tables} tables of steps (${seen.rows} rows), expected ${wanted.sweeps}`);
    }
    if (seen.colours.length !== wanted.sweeps || new Set(seen.colours).size !== wanted.sweeps) {
      failures.push(`measured lines ${seen.colours.join(', ')}: expected ${wanted.sweeps}, each in its own colour`);
    }
    for (const what of ['fits', 'knees', 'peaks']) {
      if (seen[what] < wanted[what]) {
        failures.push(`${seen[what]} ${what} drawn inside their chart, expected at least ${wanted[what]}`);
      }
    }
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`screenshot: ${screenshot}`);
  });
}

await main();
