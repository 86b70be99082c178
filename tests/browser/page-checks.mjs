// What more than one browser check does: open a page in a fresh browser where it may load
// nothing but itself, report the failures found in it and exit, and look at its charts (a function run inside the page by `page.evaluate`, which takes
// only what it is handed). Shared by check-report.mjs and check-sweep.mjs.

import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import { freshProfile, launch } from './chromium.mjs';

/// In the page: what each expected chart looks like.
export function inspectCharts(names) {
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

/// Opens `url` in `context`'s page, allowing no request but the page itself (anything else
/// is aborted and recorded) and recording console errors and page errors in `failures`.
export async function openOffline(context, url, failures, timeoutMs) {
  await context.route('**/*', (route) => {
    const requested = route.request().url();
    if (requested === url) {
      return route.continue();
    }
    failures.push(`request leaving the file: ${requested}`);
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
    if (request.url() !== url && !request.url().startsWith('data:')) {
      failures.push(`request: ${request.url()}`);
    }
  });
  const response = await page.goto(url, { waitUntil: 'load', timeout: timeoutMs });
  if (!response || !response.ok()) {
    failures.push(`loading ${url} failed (${response ? response.status() : 'no response'})`);
  }
  return page;
}

/// Opens the page file `path` offline in a fresh Chromium (see [`openOffline`]), runs
/// `check(page, failures)` on it, closes the browser, then prints each failure and exits 1,
/// or prints "all checks passed".
export async function checkPage(path, timeoutMs, check) {
  const url = pathToFileURL(path).href;
  const failures = [];
  const userDataDir = freshProfile();
  let context;
  try {
    context = await launch(userDataDir, timeoutMs);
    const page = await openOffline(context, url, failures, timeoutMs);
    await check(page, failures);
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

/// Each chart of `names` in `page` checked by [`inspectCharts`]: a line each, its problems
/// added to `failures`.
export async function checkCharts(page, names, failures) {
  for (const chart of await page.evaluate(inspectCharts, names)) {
    if (chart.problems.length === 0) {
      console.log(`chart ${chart.name}: ok (${chart.size}, ${chart.marks} marks)`);
    } else {
      failures.push(`chart ${chart.name}: ${chart.problems.join('; ')}`);
    }
  }
}
