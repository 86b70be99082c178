// A plain node `ws` echo client, as a user would write one, for bench/clients.sh: the
// leaderboard puts it beside wsbench, Artillery and Python `websockets` on the same server.
// It must stay the obvious script (one socket object per connection, a timer for the open
// loop), not a tuned one: it stands for what people measure with.
//
//   node node-ws-echo.js URL CONNECTIONS SECONDS [--warmup S] [--rate N]
//
// Closed loop (default): each connection sends a 20-byte binary message and sends the next
// when the echo arrives. Open loop (--rate N): one 1 ms timer sends what fell due since the
// start (N per second over all connections, round-robin), whatever the replies.
// Latency is from the actual send (no correction for a late sender). It runs SECONDS after
// the last connection opened (or gives up 60 s after its start); the window that counts starts
// WARMUP seconds after the last connection opened.
// Prints one JSON line: own_total (every echo received), own_rate (window), latency (µs).
'use strict';
const WebSocket = require('ws');

const [url, connsArg, secondsArg, ...rest] = process.argv.slice(2);
const option = (name, fallback) => {
  const at = rest.indexOf(name);
  return at >= 0 ? Number(rest[at + 1]) : fallback;
};
const connections = Number(connsArg);
const seconds = Number(secondsArg);
const warmup = option('--warmup', 2);
const rate = option('--rate', 0);
if (!url || !(connections > 0) || !(seconds > 0)) {
  console.error('usage: node node-ws-echo.js URL CONNECTIONS SECONDS [--warmup S] [--rate N]');
  process.exit(2);
}

const payload = Buffer.alloc(20, 0x61);
const start = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - start) / 1e9;
const sockets = [];
let open = 0;
let total = 0;
let windowStart = null;
let windowCount = 0;
let stopping = false;
const latencies = [];

function received(sentAt) {
  total += 1;
  const t = now();
  if (windowStart !== null && t >= windowStart) {
    windowCount += 1;
    latencies.push((t - sentAt) * 1e6);
  }
}

function connect() {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const sent = [];
  ws.on('open', () => {
    open += 1;
    sockets.push({ ws, sent });
    if (open === connections) {
      windowStart = now() + warmup;
      setTimeout(finish, seconds * 1000);
    }
    if (!rate) {
      sent.push(now());
      ws.send(payload);
    }
  });
  ws.on('message', () => {
    received(sent.shift());
    if (!rate && !stopping) {
      sent.push(now());
      ws.send(payload);
    }
  });
  ws.on('error', (e) => console.error(`connection error: ${e.message}`));
}

for (let i = 0; i < connections; i++) connect();

let due = 0;
let next = 0;
const pacer = rate
  ? setInterval(() => {
      if (open < connections) return;
      if (!due) due = now();
      const want = Math.floor((now() - due) * rate);
      for (; next < want; next++) {
        const s = sockets[next % sockets.length];
        s.sent.push(now());
        s.ws.send(payload);
      }
    }, 1)
  : null;

setTimeout(finish, (seconds + 60) * 1000);

function finish() {
  stopping = true;
  if (pacer) clearInterval(pacer);
  const end = now();
  latencies.sort((a, b) => a - b);
  const pct = (p) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]) : null);
  const measured = windowStart !== null ? end - windowStart : 0;
  console.log(JSON.stringify({
    connected: open,
    own_total: total,
    own_rate: measured > 0 ? windowCount / measured : null,
    p50_us: pct(0.5), p99_us: pct(0.99), p999_us: pct(0.999),
  }));
  for (const s of sockets) s.ws.terminate();
  process.exit(0);
}
