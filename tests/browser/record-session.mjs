// A real browser session with a WebSocket application, recorded two ways for `wsbench import`
// (crates/wsbench/tests/recorded_browser.rs): headless Chromium opens the application's page
// twice, once with its WebSocket pointed at `wsbench record` (the proxy writes the JSONL
// recording) and once straight at the server while the DevTools protocol's WebSocket events
// of the same browser (Network.webSocketCreated, webSocketWillSendHandshakeRequest,
// webSocketHandshakeResponseReceived, webSocketFrameSent, webSocketFrameReceived) are turned
// into a HAR file as DevTools' "Save all as HAR" writes it (`_resourceType: "websocket"`,
// `_webSocketMessages`: type send|receive, time in seconds, opcode, data; binary in base64).
// Usage: node record-session.mjs PROXIED_PAGE_URL DIRECT_PAGE_URL HAR_FILE
// Prints one JSON line: what each page showed ({hello, quotes} or {error}) and the HAR's
// WebSocket entries and messages. Exits 1 when a page fails or shows an error.

import { rmSync, writeFileSync } from 'node:fs';

import { freshProfile, launch } from './chromium.mjs';

const [proxiedUrl, directUrl, harFile] = process.argv.slice(2);
const TIMEOUT_MS = 60_000;

/// Opens `url` in a new page of `context` and waits for the application to finish.
async function session(context, url, cdpEvents) {
  const page = await context.newPage();
  if (cdpEvents) {
    const cdp = await context.newCDPSession(page);
    const names = ['webSocketCreated', 'webSocketWillSendHandshakeRequest', 'webSocketHandshakeResponseReceived',
      'webSocketFrameSent', 'webSocketFrameReceived', 'webSocketClosed'];
    for (const name of names) cdp.on(`Network.${name}`, (params) => cdpEvents.push({ name, params }));
    await cdp.send('Network.enable');
  }
  await page.goto(url, { timeout: TIMEOUT_MS });
  await page.waitForFunction(() => window.appDone === true, null, { timeout: TIMEOUT_MS });
  const result = await page.evaluate(() => window.appResult);
  await page.close();
  return result;
}

/// `{name: value}` headers as HAR's `[{name, value}]`.
const headerList = (headers) => Object.entries(headers || {}).map(([name, value]) => ({ name, value: String(value) }));

/// The HAR DevTools writes for the WebSockets whose events are `events`.
function har(events) {
  const sockets = new Map();
  const socket = (id) => {
    if (!sockets.has(id)) sockets.set(id, { url: '', messages: [], offset: 0, started: 0 });
    return sockets.get(id);
  };
  for (const { name, params } of events) {
    const ws = socket(params.requestId);
    if (name === 'webSocketCreated') ws.url = params.url;
    if (name === 'webSocketWillSendHandshakeRequest') {
      // DevTools' pseudo wall time: the handshake's wall clock plus the monotonic time since.
      ws.offset = params.wallTime - params.timestamp;
      ws.started = params.wallTime;
      ws.requestHeaders = headerList(params.request.headers);
    }
    if (name === 'webSocketHandshakeResponseReceived') {
      ws.response = params.response;
      if (params.response.requestHeaders) ws.requestHeaders = headerList(params.response.requestHeaders);
    }
    if (name === 'webSocketFrameSent' || name === 'webSocketFrameReceived') {
      const { opcode, payloadData } = params.response;
      const type = name === 'webSocketFrameSent' ? 'send' : 'receive';
      ws.messages.push({ type, time: params.timestamp + ws.offset, opcode, data: payloadData });
    }
  }
  const entries = [...sockets.values()].map((ws) => ({
    _resourceType: 'websocket',
    startedDateTime: new Date(ws.started * 1000).toISOString(),
    time: 0,
    request: { method: 'GET', url: ws.url, httpVersion: 'HTTP/1.1', headers: ws.requestHeaders || [],
      queryString: [], cookies: [], headersSize: -1, bodySize: 0 },
    response: { status: ws.response?.status ?? 0, statusText: ws.response?.statusText ?? '', httpVersion: 'HTTP/1.1',
      headers: headerList(ws.response?.headers), cookies: [], content: { size: 0, mimeType: 'x-unknown' },
      redirectURL: '', headersSize: -1, bodySize: 0 },
    cache: {},
    timings: { blocked: -1, dns: -1, ssl: -1, connect: -1, send: 0, wait: 0, receive: 0 },
    _webSocketMessages: ws.messages,
  }));
  return { log: { version: '1.2', creator: { name: 'WebInspector', version: '537.36' }, pages: [], entries } };
}

const profile = freshProfile();
let failed = false;
try {
  const context = await launch(profile, TIMEOUT_MS);
  const proxied = await session(context, proxiedUrl, null);
  const events = [];
  const direct = await session(context, directUrl, events);
  await context.close();
  const written = har(events);
  writeFileSync(harFile, JSON.stringify(written, null, 2));
  const messages = written.log.entries.reduce((n, entry) => n + entry._webSocketMessages.length, 0);
  console.log(JSON.stringify({ proxied, direct, har: { entries: written.log.entries.length, messages } }));
  failed = Boolean(!proxied || proxied.error || !direct || direct.error);
} catch (error) {
  console.error(`record-session: ${error.stack || error}`);
  failed = true;
} finally {
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
