// An rpc-websockets 10 server (JSON-RPC 2.0) for `wsbench compare` (a fleet server; the
// protocol tests start it too, through crates/testpeers):
//   - method `echo` returns its params;
//   - method `publish` with params {topic, payload} emits the event `topic` (which must be
//     one of `t0`…`t9`, registered at start) to the sockets that subscribed to it with
//     `rpc.on`; they receive {"notification":"t0","params":{…}}; it returns true.
// A method it lacks is answered with error -32601. Note rpc-websockets treats a call with
// id 0 (or no id) as a notification and never answers it.
// Usage: node server.js PORT (0: a free port). Prints `listening on
// ws://127.0.0.1:PORT` once listening.
'use strict';
const { Server } = require('rpc-websockets');

const port = Number(process.argv[2] || 0);
const server = new Server({ host: '127.0.0.1', port });
const topics = Array.from({ length: 10 }, (_, i) => `t${i}`);
for (const topic of topics) server.event(topic);
server.register('echo', (params) => params);
server.register('publish', (params) => {
    if (!params || !topics.includes(params.topic)) throw new Error('unknown topic');
    server.emit(params.topic, params);
    return true;
});
server.on('error', (error) => console.error(error));
server.on('listening', () => console.log(`listening on ws://127.0.0.1:${server.wss.address().port}`));
process.on('SIGTERM', () => process.exit(0));
