// WebSockets over HTTP/2 (RFC 8441) on node's built-in http2 module, for wsbench's tests:
// an h2c server whose SETTINGS carry SETTINGS_ENABLE_CONNECT_PROTOCOL, which answers each
// extended CONNECT (:protocol websocket) with 200 and echoes the stream's WebSocket frames
// (unmasked, same opcode; ping -> pong; close -> close and END_STREAM). Node has no
// WebSocket framing of its own, so the few lines of it are here; HTTP/2 is node's.
//
//   node h2_websocket_server.js PORT [MODE]
//     MODE echo (default) | no-connect-protocol (SETTINGS without the setting) |
//          few-streams (SETTINGS_MAX_CONCURRENT_STREAMS 10) |
//          faults (the stream of the WebSocket whose x-conn header is 7 is reset with
//          RST_STREAM(CANCEL) after its 10th message; the connection carrying x-conn 150
//          gets GOAWAY(ENHANCE_YOUR_CALM) after that WebSocket's 20th message, and is closed)
// Prints `ready PORT` once listening; outside echo mode logs each extended CONNECT and each
// fault with how many streams it ended. Stops on SIGTERM.
'use strict';
const http2 = require('http2');

const port = Number(process.argv[2] || 0);
const mode = process.argv[3] || 'echo';
const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;
const settings = mode === 'no-connect-protocol' ? {} : { enableConnectProtocol: true };
if (mode === 'few-streams') settings.maxConcurrentStreams = 10;
const server = http2.createServer({ settings, maxSessionMemory: 64 });
let connectRequests = 0;

function send(stream, first, payload) {
  const len = payload.length;
  let head;
  if (len < 126) {
    head = Buffer.from([first, len]);
  } else if (len < 65536) {
    head = Buffer.alloc(4);
    head[0] = first;
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  if (!stream.destroyed && !stream.closed) stream.write(Buffer.concat([head, payload]));
}

// Calls onMessage(first byte, payload) for every whole frame in the stream.
function frames(stream, onFrame) {
  let buf = Buffer.alloc(0);
  stream.on('data', (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (buf.length < 2) return;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      const masked = (buf[1] & 0x80) !== 0;
      const maskAt = off;
      if (masked) off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len));
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= buf[maskAt + (i & 3)];
      const first = buf[0];
      buf = buf.subarray(off + len);
      if (onFrame(first, payload) === false) return;
    }
  });
}

server.on('stream', (stream, headers) => {
  if (headers[':method'] !== 'CONNECT' || headers[':protocol'] !== 'websocket') {
    stream.respond({ ':status': 400 }, { endStream: true });
    return;
  }
  connectRequests++;
  if (mode !== 'echo') console.log(`connect request ${connectRequests}`);
  const conn = Number(headers['x-conn']);
  const response = { ':status': 200 };
  const offered = headers['sec-websocket-protocol'];
  if (offered) response['sec-websocket-protocol'] = offered.split(',')[0].trim();
  stream.respond(response);
  const session = stream.session;
  let messages = 0;
  stream.on('error', () => {});
  frames(stream, (first, payload) => {
    const opcode = first & 0x0f;
    if (opcode === 0x8) {
      send(stream, 0x88, payload.subarray(0, 2));
      stream.end();
      return false;
    }
    if (opcode === 0x9) return send(stream, 0x8a, payload);
    if (opcode === 0xa) return;
    messages++;
    if (mode === 'faults' && conn === 7 && messages === 10) {
      console.log('reset stream of x-conn 7');
      // close() would end the stream (END_STREAM) before resetting it; a proxy resetting an
      // upstream stream sends RST_STREAM alone, so the writable side is marked ended first
      // (and the 10th message is not echoed: its write would carry END_STREAM).
      stream._writableState.ending = true;
      stream.close(NGHTTP2_CANCEL);
      return false;
    }
    send(stream, first, payload);
    if (mode === 'faults' && conn === 150 && messages === 20) {
      console.log(`goaway to a connection of ${openStreams(session)} streams`);
      // Node then resets every stream of the connection (RST_STREAM NO_ERROR) and closes it.
      session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
      setTimeout(() => session.destroy(undefined, NGHTTP2_ENHANCE_YOUR_CALM), 100);
      return false;
    }
  });
});

// Streams of `session` that are still open.
const streamsOf = new WeakMap();
server.on('session', (session) => {
  streamsOf.set(session, new Set());
  session.on('error', () => {});
  session.on('stream', (stream) => {
    const open = streamsOf.get(session);
    open.add(stream);
    stream.on('close', () => open.delete(stream));
  });
});
function openStreams(session) {
  return streamsOf.get(session).size;
}

server.listen(port, '127.0.0.1', () => console.log(`ready ${server.address().port}`));
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
