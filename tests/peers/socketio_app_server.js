// A socket.io 4 server shaped as applications write them, for the protocol tests of
// `--protocol socketio` (crates/testpeers starts it): a namespace of its own behind an auth
// middleware, pub/sub events named by the application, and deliveries that carry the
// payload alone, as `io.to(room).emit(event, payload)` does. Optionally on the msgpack
// parser (socket.io-msgpack-parser), which a text-speaking client cannot talk to.
// Usage: node socketio_app_server.js PORT CONFIG_JSON, CONFIG_JSON with (all optional):
//   namespace  the namespace served (default "/")
//   token      the auth middleware lets a socket in only when handshake.auth.token is this;
//              others get CONNECT_ERROR "invalid token" (none: no middleware)
//   subscribe  the event that joins a room: (room, ack) → join, ack() (default "subscribe")
//   publish    the event that publishes: (room, payload) (default "publish"); with
//              "object": true, ({topic, payload}) as wsbench sends by default
//   delivery   the event each room member gets, with the payload alone (default "message")
//   parser     "msgpack" for socket.io-msgpack-parser
// Prints `listening on ws://127.0.0.1:PORT` once listening.
'use strict';
const http = require('http');
const { Server } = require('socket.io');

const port = Number(process.argv[2] || 0);
const config = JSON.parse(process.argv[3] || '{}');
const namespace = config.namespace || '/';
const subscribe = config.subscribe || 'subscribe';
const publish = config.publish || 'publish';
const delivery = config.delivery || 'message';

const options = { transports: ['websocket'], serveClient: false };
if (config.parser === 'msgpack') options.parser = require('socket.io-msgpack-parser');
const httpServer = http.createServer();
const io = new Server(httpServer, options);
const nsp = io.of(namespace);

if (config.token !== undefined) {
    nsp.use((socket, next) => {
        if (socket.handshake.auth && socket.handshake.auth.token === config.token) return next();
        next(new Error('invalid token'));
    });
}

nsp.on('connection', (socket) => {
    socket.on(subscribe, (room, ack) => {
        socket.join(String(room));
        if (typeof ack === 'function') ack();
    });
    socket.on(publish, (room, payload) => {
        if (config.object) ({ topic: room, payload } = room || {});
        nsp.to(String(room)).emit(delivery, payload);
    });
});

httpServer.listen(port, '127.0.0.1', () => {
    console.log(`listening on ws://127.0.0.1:${httpServer.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
