// An rpc-websockets 10 server (JSON-RPC 2.0) for `wsbench compare` (a fleet server; the
// protocol tests start it too, through crates/testpeers):
//   - method `echo` returns its params;
//   - method `block_number` takes no params, as geth's `eth_blockNumber` does: it returns a
//     counter as a hex string, and refuses any params with -32602 "too many arguments";
//   - method `publish` with params {topic, payload} emits the event `topic` (which must be
//     one of `t0`…`t9`, registered at start) to the sockets that subscribed to it with
//     `rpc.on`; they receive {"notification":"t0","params":{…}}; it returns true.
// A method it lacks is answered with error -32601. A batch (an array of calls) is answered
// with the array of their responses (rpc-websockets' own batch support). Note rpc-websockets treats a call with
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
let block = 0;
server.register('block_number', (params) => {
    if (params !== undefined && !(Array.isArray(params) && params.length === 0)) {
        throw { code: -32602, message: 'too many arguments, want at most 0' };
    }
    block += 1;
    return '0x' + block.toString(16);
});
server.register('publish', (params) => {
    if (!params || !topics.includes(params.topic)) throw new Error('unknown topic');
    server.emit(params.topic, params);
    return true;
});
server.on('error', (error) => console.error(error));
server.on('listening', () => console.log(`listening on ws://127.0.0.1:${server.wss.address().port}`));
process.on('SIGTERM', () => process.exit(0));
