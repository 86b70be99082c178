// A graphql-ws 6 server (the graphql-transport-ws protocol) for `wsbench compare` (a fleet
// server; the protocol tests start it too, through crates/testpeers). Schema:
//   query        { echo(message: String!): String! }            the message back
//   subscription { echo(message: String!): String! }            yields the message once
//   subscription { ticks(count: Int!): Int! }                   yields 1..count, then completes
// A connection on a path starting /forbidden is refused at connection_init (onConnect says
// no: close 4403 "Forbidden"), as a server refusing a client's credentials does.
// Usage: node server.js PORT (0: a free port). Prints `listening on
// ws://127.0.0.1:PORT` once listening.
'use strict';
const { WebSocketServer } = require('ws');
const { useServer } = require('graphql-ws/use/ws');
const { buildSchema } = require('graphql');

const schema = buildSchema(`
  type Query { echo(message: String!): String! }
  type Subscription {
    echo(message: String!): String!
    ticks(count: Int!): Int!
  }
`);

const roots = {
    query: { echo: ({ message }) => message },
    subscription: {
        echo: async function* ({ message }) {
            yield { echo: message };
        },
        ticks: async function* ({ count }) {
            for (let i = 1; i <= count; i++) yield { ticks: i };
        },
    },
};

const port = Number(process.argv[2] || 0);
const wss = new WebSocketServer({ host: '127.0.0.1', port });
wss.on('error', (error) => console.error(error));
const onConnect = (ctx) => !ctx.extra.request.url.startsWith('/forbidden');
useServer({ schema, roots, onConnect }, wss);
wss.on('listening', () => console.log(`listening on ws://127.0.0.1:${wss.address().port}`));
process.on('SIGTERM', () => process.exit(0));
