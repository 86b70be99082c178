#!/usr/bin/env node
// Interop peer: drives a WebSocket echo server with the node `ws` library.
//
// Run by crates/wsbench/tests/interop.rs against `wsbench serve` to check that a widely used
// third-party client agrees with our server about framing, fragmentation, control frames and
// the closing handshake. Usage: `node client.js ws://127.0.0.1:PORT` (or `wss://…`; TLS
// certificates are not verified because `wsbench serve --tls` uses a self-signed one).
//
// Prints one `ok …` line per check and exits 0; on the first failure prints `FAIL …` to
// stderr and exits 1.
'use strict';

const crypto = require('crypto');
const path = require('path');
const WebSocket = require(path.join(__dirname, 'node_modules', 'ws'));

// Milliseconds allowed for any single step (connect, one round trip, the closing handshake).
const STEP_TIMEOUT_MS = 30000;
const MIB = 1024 * 1024;

function ok(msg) {
  console.log(`ok ${msg}`);
}

function describe(data, isBinary) {
  if (!isBinary) return `text of ${data.toString('utf8').length} chars`;
  const sha = crypto.createHash('sha256').update(data).digest('hex').slice(0, 16);
  return `binary of ${data.length} bytes (sha256 ${sha})`;
}

// Collects everything the connection emits so the checks can await events in order.
class Peer {
  constructor(url) {
    this.events = [];
    this.waiter = null;
    this.ws = new WebSocket(url, {
      rejectUnauthorized: false,
      handshakeTimeout: STEP_TIMEOUT_MS,
      maxPayload: 64 * MIB,
    });
    const push = (ev) => {
      this.events.push(ev);
      if (this.waiter) {
        const w = this.waiter;
        this.waiter = null;
        w();
      }
    };
    this.ws.on('open', () => push({ type: 'open' }));
    this.ws.on('message', (data, isBinary) => push({ type: 'message', data, isBinary }));
    this.ws.on('pong', (data) => push({ type: 'pong', data }));
    this.ws.on('close', (code, reason) => push({ type: 'close', code, reason: reason.toString() }));
    this.ws.on('error', (err) => push({ type: 'error', err }));
  }

  // Resolves with the next event; rejects if none arrives within the step timeout.
  async next(what) {
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    while (this.events.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${what}: nothing received within ${STEP_TIMEOUT_MS} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return this.events.shift();
  }

  // Like next(), but any event other than `type` fails the check.
  async expect(type, what) {
    const ev = await this.next(what);
    if (ev.type === type) return ev;
    if (ev.type === 'error') throw new Error(`${what}: connection error: ${ev.err.message}`);
    if (ev.type === 'close') {
      throw new Error(`${what}: connection closed with code ${ev.code} reason '${ev.reason}'`);
    }
    throw new Error(`${what}: expected ${type}, got ${ev.type}`);
  }

  send(data, opts) {
    return new Promise((resolve, reject) => {
      this.ws.send(data, opts, (err) => (err ? reject(err) : resolve()));
    });
  }
}

async function roundTrip(peer, name, payload, isBinary) {
  const start = process.hrtime.bigint();
  await peer.send(payload, { binary: isBinary });
  const ev = await peer.expect('message', name);
  const sent = Buffer.from(payload);
  if (ev.isBinary !== isBinary) {
    throw new Error(`${name}: sent ${isBinary ? 'binary' : 'text'}, got ${ev.isBinary ? 'binary' : 'text'} back`);
  }
  if (!ev.data.equals(sent)) {
    throw new Error(`${name}: sent ${describe(sent, isBinary)}, got ${describe(ev.data, ev.isBinary)} back`);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  ok(`${name}: ${describe(sent, isBinary)} echoed in ${secs.toFixed(3)}s`);
}

async function run(url) {
  const peer = new Peer(url);
  await peer.expect('open', 'connect');
  ok(`connected to ${url} (extensions: '${peer.ws.extensions}')`);

  await roundTrip(peer, 'text', 'héllo wörld — ünïcödé ✓ 日本語 🦀', false);
  await roundTrip(peer, 'binary', Buffer.from([...Array(256).keys()]), true);
  await roundTrip(peer, 'empty text', '', false);
  await roundTrip(peer, 'binary 1 MiB', crypto.randomBytes(MIB), true);
  await roundTrip(peer, 'binary 16 MiB', crypto.randomBytes(16 * MIB), true);

  // A text message sent as three fragments (continuation frames) must come back as one
  // reassembled message.
  const fragments = ['fragmented ', 'mëssage ', 'reassembled'];
  for (let i = 0; i < fragments.length; i++) {
    await peer.send(fragments[i], { binary: false, fin: i === fragments.length - 1 });
  }
  const frag = await peer.expect('message', 'fragmented text');
  const whole = fragments.join('');
  if (frag.isBinary || frag.data.toString('utf8') !== whole) {
    throw new Error(`fragmented text: got ${describe(frag.data, frag.isBinary)} '${frag.data}' back`);
  }
  ok(`fragmented text: ${fragments.length} fragments reassembled into '${whole}'`);

  const pingPayload = Buffer.from('ping-payload-\x00\xff', 'latin1');
  peer.ws.ping(pingPayload);
  const pong = await peer.expect('pong', 'ping');
  if (!pong.data.equals(pingPayload)) {
    throw new Error(`ping: sent payload ${pingPayload.toString('hex')}, pong carried ${pong.data.toString('hex')}`);
  }
  ok(`ping: pong carried the payload ${pingPayload.toString('hex')}`);

  // Messages still flow after the control frame.
  await roundTrip(peer, 'text after ping', 'still open', false);

  peer.ws.close(1000, 'interop done');
  const closed = await peer.expect('close', 'close');
  if (closed.code !== 1000) {
    // ws reports 1005 when the close frame had no code and 1006 when no close frame came.
    throw new Error(`close: sent code 1000, server answered ${closed.code} (reason '${closed.reason}')`);
  }
  ok(`close: server echoed close code ${closed.code}`);
}

async function main() {
  if (process.argv.length !== 3) {
    console.error(`usage: node ${path.basename(process.argv[1])} ws://HOST:PORT | wss://HOST:PORT`);
    process.exit(2);
  }
  try {
    await run(process.argv[2]);
  } catch (err) {
    console.error(`FAIL ${err.message}`);
    process.exit(1);
  }
  console.log('all checks passed');
  process.exit(0);
}

main();
