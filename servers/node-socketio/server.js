// A Socket.IO 4 server for `wsbench compare` (a fleet server; the protocol tests start it
// too, through crates/testpeers):
//   - `echo`: answered by its acknowledgement with the same arguments (binary attachments
//     come back as binary attachments);
//   - rooms: `subscribe`(topic) joins the room `topic` and is acknowledged with `true`,
//     `publish`({topic, payload}) is delivered to the room as event `message` with the
//     object as it came, and acknowledged with `true` when there is an ack;
//   - only the namespace `/` exists, so a connect to any other namespace gets CONNECT_ERROR.
// Usage: node server.js PORT [PING_INTERVAL_MS [PING_TIMEOUT_MS]] (port 0: a free
// port; the ping interval and the wait for each pong default to socket.io's 25000 and
// 20000). Prints `listening on ws://127.0.0.1:PORT` once listening.
'use strict';
const http = require('http');
const { Server } = require('socket.io');

const port = Number(process.argv[2] || 0);
const pingInterval = Number(process.argv[3] || 25000);
const pingTimeout = Number(process.argv[4] || 20000);
const httpServer = http.createServer();
const io = new Server(httpServer, { transports: ['websocket'], serveClient: false, pingInterval, pingTimeout });

io.on('connection', (socket) => {
    socket.on('echo', (...args) => {
        const ack = typeof args[args.length - 1] === 'function' ? args.pop() : null;
        if (ack) ack(...args);
    });
    socket.on('subscribe', (topic, ack) => {
        socket.join(String(topic));
        if (typeof ack === 'function') ack(true);
    });
    socket.on('publish', (message, ack) => {
        if (message && typeof message.topic === 'string') {
            io.to(message.topic).emit('message', message);
        }
        if (typeof ack === 'function') ack(true);
    });
});

httpServer.listen(port, '127.0.0.1', () => {
    console.log(`listening on ws://127.0.0.1:${httpServer.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
