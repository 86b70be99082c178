// Why this exists: it is the seeds' benchmark client, the thing wsbench replaces, rebuilt
// as the seeds wrote it: node + the `ws` package (pinned in package-lock.json), a JSON text
// message {"ts": ..., "seq": n} per round trip, parsed on return to compute a latency.
// bench/run.sh compares `wsbench run` with it (goal: wsbench run >= 2x this).
//
// Usage: node node-ws-client.js URL CONNECTIONS SECONDS [--warmup SECONDS]
//   Opens CONNECTIONS connections to URL, then runs a closed loop: every connection sends
//   {"ts": Date.now(), "seq": n}, waits for the echo, parses it, records the latency and sends
//   the next. Once all connections are open it runs --warmup seconds (default 0) without
//   counting, then counts completed echoes for SECONDS and prints one line on stdout:
//   echoes_per_sec=N
//   Details (connect time, counts, mean latency) go to stderr. Exit 1 on any error.
'use strict';

const WebSocket = require('ws');

function usage() {
  process.stderr.write('usage: node node-ws-client.js URL CONNECTIONS SECONDS [--warmup SECONDS]\n');
  process.exit(2);
}

const args = process.argv.slice(2);
if (args.length < 3) usage();
const url = args[0];
const connections = Number.parseInt(args[1], 10);
const seconds = Number.parseFloat(args[2]);
let warmup = 0;
for (let i = 3; i < args.length; i++) {
  if (args[i] === '--warmup' && i + 1 < args.length) warmup = Number.parseFloat(args[++i]);
  else usage();
}
if (!(connections > 0) || !(seconds > 0) || !(warmup >= 0)) usage();

let counting = false;
let running = false;
let echoes = 0;
let latencySumMs = 0;
let open = 0;
const sockets = [];
const started = process.hrtime.bigint();

function fail(message) {
  process.stderr.write(`node-ws-client: ${message}\n`);
  process.exit(1);
}

function sendNext(ws) {
  ws.seq += 1;
  ws.send(JSON.stringify({ ts: Date.now(), seq: ws.seq }));
}

function onMessage(data) {
  const echo = JSON.parse(data.toString());
  if (echo.seq !== this.seq) fail(`echo out of order: got seq ${echo.seq}, expected ${this.seq}`);
  const latency = Date.now() - echo.ts;
  if (counting) {
    echoes += 1;
    latencySumMs += latency;
  }
  if (running) sendNext(this);
}

function startLoop() {
  const upSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stderr.write(`node-ws-client: ${connections} connections up in ${upSeconds.toFixed(3)} s\n`);
  running = true;
  for (const ws of sockets) sendNext(ws);
  setTimeout(() => {
    counting = true;
    const from = process.hrtime.bigint();
    setTimeout(() => {
      const elapsed = Number(process.hrtime.bigint() - from) / 1e9;
      running = false;
      counting = false;
      const mean = echoes ? (latencySumMs / echoes).toFixed(3) : 'n/a';
      process.stderr.write(`node-ws-client: ${echoes} echoes in ${elapsed.toFixed(3)} s, mean latency ${mean} ms\n`);
      process.stdout.write(`echoes_per_sec=${Math.round(echoes / elapsed)}\n`, () => process.exit(0));
    }, seconds * 1000);
  }, warmup * 1000);
}

for (let i = 0; i < connections; i++) {
  // `ws` offers permessage-deflate unless told not to, and wsbench serve accepts it: every
  // message would then be compressed and inflated on libuv's thread pool, which the seeds'
  // client did not do (their servers did not negotiate it) and the other clients here do not.
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.seq = 0;
  ws.on('open', () => {
    open += 1;
    if (open === connections) startLoop();
  });
  ws.on('message', onMessage);
  ws.on('error', (err) => fail(`connection ${i}: ${err.message}`));
  ws.on('close', (code) => {
    if (running) fail(`connection ${i} closed by the server (code ${code})`);
  });
  sockets.push(ws);
}

setTimeout(() => fail(`only ${open} of ${connections} connections open after 60 s`), 60000).unref();
