#!/usr/bin/env node
// wsbench fleet: a WebSocket echo server on node.js with the `ws` library (the seeds' node.js
// server). Usage: `node server.js PORT`.
//
// Listens on 127.0.0.1:PORT on one event loop, echoes every message with its type (text stays
// text, binary stays binary); `ws` answers pings with pongs and completes the closing
// handshake. A plain HTTP GET gets 200. Prints `listening on ws://127.0.0.1:PORT` once ready.
// Exits on SIGTERM or SIGINT.
'use strict';

const http = require('http');
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2] || 0);
// `WSBENCH_DEFLATE=1` (set by `wsbench compare --compression deflate`): negotiate
// permessage-deflate with `ws`'s defaults; off otherwise, as `ws` servers default to.
const DEFLATE = process.env.WSBENCH_DEFLATE === '1';
// `WSBENCH_PUBSUB=1` (set by `wsbench compare --scenario pubsub`): the pub/sub protocol of
// wsbench's docs/protocols.md instead of echo. `ws` has no publish of its own: a publish's
// received Buffer is sent to each subscriber (ws frames it per socket; the payload is shared).
const PUBSUB = process.env.WSBENCH_PUBSUB === '1';
// Large enough for 16 MiB messages, capped like wsbench serve's default.
const MAX_MESSAGE = 128 * 1024 * 1024;

const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('ok\n');
});

const wss = new WebSocketServer({
  server,
  maxPayload: MAX_MESSAGE,
  perMessageDeflate: DEFLATE,
  clientTracking: false,
});

// Topic name → the set of its subscribed sockets (pub/sub mode).
const topics = new Map();

function onPubSub(ws, data, isBinary) {
  let message = null;
  if (!isBinary) {
    try {
      message = JSON.parse(data);
    } catch (e) {
      message = null;
    }
  }
  if (message && typeof message.sub === 'string') {
    if (!topics.has(message.sub)) topics.set(message.sub, new Set());
    topics.get(message.sub).add(ws);
    ws.subscriptions = ws.subscriptions || [];
    ws.subscriptions.push(message.sub);
    ws.send(JSON.stringify({ subscribed: message.sub }));
  } else if (message && typeof message.pub === 'string') {
    for (const subscriber of topics.get(message.pub) || []) subscriber.send(data, { binary: false });
  } else {
    ws.send(data, { binary: isBinary });
  }
}

wss.on('connection', (ws) => {
  if (PUBSUB) {
    ws.on('message', (data, isBinary) => onPubSub(ws, data, isBinary));
    ws.on('close', () => (ws.subscriptions || []).forEach((topic) => topics.get(topic).delete(ws)));
  } else {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  }
  // Without an error listener one bad frame (e.g. invalid UTF-8) would crash the process;
  // with it, `ws` closes only that connection.
  ws.on('error', () => {});
});

server.on('error', (err) => {
  console.error(`server.js: ${err.message}`);
  process.exit(1);
});

// A deep accept queue: many clients connect at once, and node's default (511) drops SYNs.
server.listen({ host: '127.0.0.1', port, backlog: 4096 }, () => {
  console.log(`listening on ws://127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
