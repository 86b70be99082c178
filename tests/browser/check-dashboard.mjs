// Watches the live page of `wsbench run --dashboard` in a real browser (the system Chromium,
// driven by the pinned playwright-core) while the run runs: the browser starts first and
// prints "browser ready"; the test then starts wsbench, and the page is loaded as soon as
// it answers. Checks that the page connects (its state turns to running), that its charts
// grow while the run runs (the rate chart's point count rises between two looks), that it
// requests nothing but its own address and logs no error, and that it ends showing the
// final figures. Saves a screenshot mid-run and one at the end, and prints the final
// figures as one JSON line (`figures: {...}`) for the test to compare with the result file.
// Run by crates/wsbench/tests/browser.rs.
//
// usage: node check-dashboard.mjs URL MID-RUN.png END.png
// Prints one line per check and "all checks passed" on success; exits 1 on any failure.

import { rmSync } from 'node:fs';
import { resolve } from 'node:path';

import { freshProfile, launch } from './chromium.mjs';

// How long wsbench may take to start listening, and the run to end.
const TIMEOUT_MS = 120_000;

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/// Loads `url` once something answers there.
async function loadWhenUp(page, url) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    try {
      const response = await page.goto(url, { waitUntil: 'load', timeout: TIMEOUT_MS });
      if (response && response.ok()) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(100);
  }
}

const points = (page) => page.evaluate(() => Number(document.querySelector('canvas[data-chart="rate"]').dataset.points || 0));

async function main() {
  const [url, midRun, end] = process.argv.slice(2);
  if (!url || !midRun || !end) {
    console.error('usage: node check-dashboard.mjs URL MID-RUN.png END.png');
    process.exit(2);
  }
  const origin = new URL(url).origin;
  const failures = [];
  const userDataDir = freshProfile();
  let context;
  try {
    context = await launch(userDataDir, TIMEOUT_MS);
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      // The event stream is refused once wsbench has exited; the page says "disconnected".
      if (message.type() === 'error' && !message.text().includes('ERR_CONNECTION_REFUSED')) {
        failures.push(`console error: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => failures.push(`page error: ${error.message}`));
    page.on('crash', () => failures.push('the page crashed'));
    context.on('close', () => console.log('the browser closed'));
    page.on('request', (request) => {
      if (!request.url().startsWith(origin + '/')) failures.push(`request elsewhere: ${request.url()}`);
    });
    console.log('browser ready');

    await loadWhenUp(page, url);
    await page.waitForSelector('body[data-state="running"], body[data-state="ended"]', { timeout: TIMEOUT_MS });
    console.log(`connected: ${await page.title()}`);
    await page.waitForFunction(
      () => Number(document.querySelector('canvas[data-chart="rate"]').dataset.points || 0) >= 1,
      null,
      { timeout: TIMEOUT_MS },
    );
    const first = await points(page);
    await page.waitForFunction(
      (seen) => Number(document.querySelector('canvas[data-chart="rate"]').dataset.points || 0) > seen,
      first,
      { timeout: TIMEOUT_MS },
    );
    const later = await points(page);
    const state = await page.evaluate(() => document.body.dataset.state);
    console.log(`charts grow: rate ${first} -> ${later} points while ${state}`);
    if (state !== 'running') failures.push(`the run ended before the charts were seen growing (${state})`);
    await page.screenshot({ path: resolve(midRun), fullPage: true });
    console.log(`screenshot mid-run: ${resolve(midRun)}`);

    await page.waitForSelector('body[data-state="ended"]', { timeout: TIMEOUT_MS });
    const shown = await page.evaluate(() => ({
      figures: Object.fromEntries(
        [...document.querySelectorAll('[data-figure]')].map((cell) => [cell.dataset.figure, Number(cell.dataset.value)]),
      ),
      html: document.getElementById('html-report')?.textContent ?? null,
      report: document.getElementById('report').textContent,
      charts: Object.fromEntries(
        [...document.querySelectorAll('canvas[data-chart]')].map((canvas) => [canvas.dataset.chart, Number(canvas.dataset.points)]),
      ),
    }));
    console.log(`charts at the end: ${JSON.stringify(shown.charts)}`);
    for (const [chart, count] of Object.entries(shown.charts)) {
      if (!(count > 0)) failures.push(`chart ${chart} is empty at the end`);
    }
    if (Object.keys(shown.figures).length === 0) failures.push('the end shows no figures');
    if (!shown.report.includes('latency')) failures.push('the end shows no report');
    console.log(`html link: ${shown.html}`);
    console.log(`figures: ${JSON.stringify(shown.figures)}`);
    await page.screenshot({ path: resolve(end), fullPage: true });
    console.log(`screenshot at the end: ${resolve(end)}`);
  } catch (error) {
    failures.push(`browser: ${error.stack ?? error}`);
  } finally {
    if (context) await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
  if (failures.length > 0) {
    for (const failure of failures) console.error(`FAIL ${failure}`);
    process.exit(1);
  }
  console.log('all checks passed');
}

await main();
