// The browser the page checks run in: the system Chromium, driven by the pinned
// playwright-core, headless and fresh (a throw-away profile), at one viewport so that
// screenshots compare. Shared by check-report.mjs and check-dashboard.mjs.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/// A fresh profile folder for one browser (removed by the caller when done).
export const freshProfile = () => mkdtempSync(join(tmpdir(), 'wsbench-chromium-'));

/// Starts Chromium on the profile `userDataDir` (a persistent context is how Playwright
/// takes a --user-data-dir; the folder is fresh), giving up after `timeoutMs`.
export const launch = (userDataDir, timeoutMs) =>
  chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1360, height: 900 },
    deviceScaleFactor: 1,
    timeout: timeoutMs,
  });
