#!/usr/bin/env node
// Interop peer: a Socket.IO 4 server streaming ticks to a room, for the tests of
// `wsbench run stream --protocol socketio`. A client that emits `subscribe` with the room's
// name joins it; every 10 ms the room is emitted the event `tick` with `{seq, ts}` (ts: the
// Unix time in ms), the same tick to every member. Needs socket.io on NODE_PATH
// (tests/peers/node_modules). Usage: `node socketio_stream_server.js` (a free port on
// 127.0.0.1); prints `listening on ws://127.0.0.1:PORT` once ready and exits when its stdin
// closes.
'use strict';
const http = require('http');
const { Server } = require('socket.io');

const httpServer = http.createServer();
const io = new Server(httpServer, { transports: ['websocket'], serveClient: false });
let seq = 0;

io.on('connection', (socket) => {
  socket.on('subscribe', (room) => socket.join(String(room)));
});

setInterval(() => {
  seq += 1;
  io.to('ticks').emit('tick', { seq, ts: Date.now() });
}, 10);

httpServer.listen(0, '127.0.0.1', () => {
  console.log(`listening on ws://127.0.0.1:${httpServer.address().port}`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
