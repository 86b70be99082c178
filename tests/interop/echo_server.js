#!/usr/bin/env node
// Interop peer: a WebSocket echo server built on the node `ws` library.
//
// Run by crates/wsbench/tests/engine.rs so that wsbench's load engine is measured against a
// widely used third-party server, not only its own. Usage: `node echo_server.js [PORT]
// [--deflate]` (default 0: a free port; `--deflate` turns on `perMessageDeflate`, off by
// default as in `ws` itself). Listens on 127.0.0.1, echoes every message with its type, and
// prints `listening on ws://127.0.0.1:PORT` once ready (the same line as `wsbench serve`).
// Exits on SIGTERM or SIGINT, or when its stdin closes (so it never outlives its parent).
'use strict';

const path = require('path');
const { WebSocketServer } = require(path.join(__dirname, 'node_modules', 'ws'));

const args = process.argv.slice(2);
const deflate = args.includes('--deflate');
const port = Number(args.find((a) => a !== '--deflate') || 0);
const wss = new WebSocketServer({
  host: '127.0.0.1',
  port,
  // Many clients connect at once: a deep accept queue avoids dropped SYNs.
  backlog: 4096,
  maxPayload: 128 * 1024 * 1024,
  perMessageDeflate: deflate,
  clientTracking: false,
});

wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('error', () => {});
});

wss.on('listening', () => {
  console.log(`listening on ws://127.0.0.1:${wss.address().port}`);
});

wss.on('error', (err) => {
  console.error(`echo_server: ${err.message}`);
  process.exit(1);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
