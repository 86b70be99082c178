// wsbench fleet: a WebSocket echo server on Bun.serve, whose built-in WebSocket server is
// uWebSockets (the uWS row). Usage: `bun server.js PORT`.
//
// Listens on 127.0.0.1:PORT on Bun's one event loop, echoes every message with its type (a
// text message arrives as a string and goes back as text, a binary one as a Buffer and goes
// back as binary); uWS answers pings with pongs and completes the closing handshake. A plain
// HTTP GET gets 200. Prints `listening on ws://127.0.0.1:PORT` once ready. Exits on SIGTERM or
// SIGINT.

const port = Number(process.argv[2] || 0);
// `WSBENCH_DEFLATE=1` (set by `wsbench compare --compression deflate`): negotiate
// permessage-deflate and send echoes compressed; off otherwise, Bun's default.
const DEFLATE = process.env.WSBENCH_DEFLATE === '1';
// `WSBENCH_PUBSUB=1` (set by `wsbench compare --scenario pubsub`): speak the pub/sub protocol
// of wsbench's docs/protocols.md with Bun's native topics, `ws.subscribe` and
// `server.publish` (uWS encodes a publish once for all of a topic's subscribers).
const PUBSUB = process.env.WSBENCH_PUBSUB === '1';
// Large enough for 16 MiB messages, capped like wsbench serve's default.
const MAX_MESSAGE = 128 * 1024 * 1024;

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  // No backlog option here: Bun 1.4.5's Bun.serve listens with a fixed backlog of 512 (a
  // `backlog` option is ignored; `ss -ltn` shows Send-Q 512), so a connection burst of more
  // than 512 at once can see SYN retries where the other fleet servers (4096) do not.
  fetch(req, server) {
    if (req.headers.get('upgrade')?.toLowerCase() === 'websocket') {
      return server.upgrade(req) ? undefined : new Response('bad upgrade\n', { status: 400 });
    }
    return new Response('ok\n', { headers: { 'Content-Type': 'text/plain' } });
  },
  websocket: {
    message(ws, message) {
      if (PUBSUB && typeof message === 'string' && pubsub(ws, message)) {
        return;
      }
      ws.send(message, DEFLATE);
    },
    maxPayloadLength: MAX_MESSAGE,
    // Bytes a connection may have queued before send() drops a message (default 16 MiB): raised
    // so that echoes of messages up to the maximum size are not dropped while the peer reads.
    backpressureLimit: 2 * MAX_MESSAGE,
    perMessageDeflate: DEFLATE,
    // Like the other fleet servers: no idle timeout and no server-initiated pings, so a
    // scalability run can hold idle connections for as long as it likes.
    idleTimeout: 0,
    sendPings: false,
  },
});

// A `{"sub":T}` or `{"pub":T,...}` command handled; false for any other message (echoed).
function pubsub(ws, message) {
  let command;
  try {
    command = JSON.parse(message);
  } catch {
    return false;
  }
  if (typeof command?.sub === 'string') {
    ws.subscribe(command.sub);
    ws.send(JSON.stringify({ subscribed: command.sub }));
    return true;
  }
  if (typeof command?.pub === 'string') {
    // The payload unchanged, to every subscriber of the topic (the publisher too, if it
    // subscribed: `server.publish`, unlike `ws.publish`, leaves no one out).
    server.publish(command.pub, message);
    return true;
  }
  return false;
}

console.log(`listening on ws://127.0.0.1:${server.port}`);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
