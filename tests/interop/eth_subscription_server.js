#!/usr/bin/env node
// Interop peer: a JSON-RPC 2.0 server streaming new heads the way Ethereum nodes do, on the
// node `ws` library, for the tests of `wsbench run stream --protocol jsonrpc`.
//
// A client calls `eth_subscribe` with params `["newHeads"]` and is answered with its
// subscription id; from then on, every 20 ms, every subscriber is sent the same head as an
// `eth_subscription` notification: `{"params":{"subscription":ID,"result":{"number":"0x…",
// "timestamp":"0x…"}}}` (the timestamp in seconds, as nodes write it). Any other call is
// answered with error -32601. Usage: `node eth_subscription_server.js` (a free port on
// 127.0.0.1); prints `listening on ws://127.0.0.1:PORT` once ready and exits when its stdin
// closes.
'use strict';

const path = require('path');
const { WebSocketServer } = require(path.join(__dirname, 'node_modules', 'ws'));

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, backlog: 4096, clientTracking: false });
const subscribers = new Map();
let nextSubscription = 1;
let block = 0x1000;

wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    let call;
    try {
      call = JSON.parse(data.toString());
    } catch (e) {
      return;
    }
    if (call.method === 'eth_subscribe' && Array.isArray(call.params) && call.params[0] === 'newHeads') {
      const id = '0x' + (nextSubscription++).toString(16);
      subscribers.set(ws, id);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: id }));
    } else {
      const error = { code: -32601, message: `the method ${call.method} does not exist/is not available` };
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, error }));
    }
  });
  ws.on('close', () => subscribers.delete(ws));
  ws.on('error', () => {});
});

setInterval(() => {
  block += 1;
  const head = { number: '0x' + block.toString(16), timestamp: '0x' + Math.floor(Date.now() / 1000).toString(16) };
  for (const [ws, subscription] of subscribers) {
    const params = { subscription, result: head };
    ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params }));
  }
}, 20);

wss.on('listening', () => console.log(`listening on ws://127.0.0.1:${wss.address().port}`));
wss.on('error', (err) => {
  console.error(`eth_subscription_server: ${err.message}`);
  process.exit(1);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
