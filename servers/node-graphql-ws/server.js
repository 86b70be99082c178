// A graphql-ws 6 server (the graphql-transport-ws protocol) for `wsbench compare` (a fleet
// server; the protocol tests start it too, through crates/testpeers). Schema:
//   query        { echo(message: String!): String! }            the message back
//   query        { secret: String }                             refused: a GraphQL error whose
//                                                               extensions.code is FORBIDDEN
//   subscription { echo(message: String!): String! }            yields the message once
//   subscription { ticks(count: Int!): Int! }                   yields 1..count, then completes
//   subscription { messages(topic: String!): String! }           what is published to topic
//   mutation     { publish(topic: String!, payload: String!): Boolean! }
//   subscription { room(name: String!): Said! }                  what is said in the room
//   mutation     { say(room: String!, body: String!): Boolean! }  (Said: { room, body })
// Pub/sub goes through an in-memory PubSub (a subscription fed by mutations), as an
// application's GraphQL server does with graphql-subscriptions or graphql-yoga's.
// A connection on a path starting /forbidden is refused at connection_init (onConnect says
// no: close 4403 "Forbidden"), as a server refusing a client's credentials does; one on a
// path starting /private is refused unless connection_init's payload carries the token
// {"token":"let-me-in"}.
// Usage: node server.js PORT (0: a free port). Prints `listening on
// ws://127.0.0.1:PORT` once listening.
'use strict';
const { WebSocketServer } = require('ws');
const { useServer } = require('graphql-ws/use/ws');
const { buildSchema, GraphQLError } = require('graphql');

const schema = buildSchema(`
  type Query {
    echo(message: String!): String!
    secret: String
  }
  type Said { room: String!, body: String! }
  type Mutation {
    publish(topic: String!, payload: String!): Boolean!
    say(room: String!, body: String!): Boolean!
  }
  type Subscription {
    echo(message: String!): String!
    ticks(count: Int!): Int!
    messages(topic: String!): String!
    room(name: String!): Said!
  }
`);

// Channels of listeners; subscribing returns an async iterator of what is published to the
// channel from then on (registered at once, not at its first next()).
class PubSub {
    constructor() {
        this.channels = new Map();
    }
    publish(channel, value) {
        for (const push of this.channels.get(channel) ?? []) push(value);
    }
    subscribe(channel) {
        const queue = [];
        let wake = null;
        let done = false;
        let listeners = this.channels.get(channel);
        if (!listeners) this.channels.set(channel, (listeners = new Set()));
        const push = (value) => {
            if (wake) {
                wake({ value, done: false });
                wake = null;
            } else queue.push(value);
        };
        listeners.add(push);
        const channels = this.channels;
        return {
            [Symbol.asyncIterator]() {
                return this;
            },
            next() {
                if (queue.length) return Promise.resolve({ value: queue.shift(), done: false });
                if (done) return Promise.resolve({ value: undefined, done: true });
                return new Promise((resolve) => (wake = resolve));
            },
            return() {
                done = true;
                listeners.delete(push);
                if (!listeners.size) channels.delete(channel);
                if (wake) wake({ value: undefined, done: true });
                return Promise.resolve({ value: undefined, done: true });
            },
        };
    }
}
const pubsub = new PubSub();

const roots = {
    query: {
        echo: ({ message }) => message,
        secret: () => {
            throw new GraphQLError('not allowed to read the secret', { extensions: { code: 'FORBIDDEN' } });
        },
    },
    subscription: {
        echo: async function* ({ message }) {
            yield { echo: message };
        },
        ticks: async function* ({ count }) {
            for (let i = 1; i <= count; i++) yield { ticks: i };
        },
        messages: ({ topic }) => pubsub.subscribe(`topic:${topic}`),
        room: ({ name }) => pubsub.subscribe(`room:${name}`),
    },
    mutation: {
        publish: ({ topic, payload }) => {
            pubsub.publish(`topic:${topic}`, { messages: payload });
            return true;
        },
        say: ({ room, body }) => {
            pubsub.publish(`room:${room}`, { room: { room, body } });
            return true;
        },
    },
};

const port = Number(process.argv[2] || 0);
const wss = new WebSocketServer({ host: '127.0.0.1', port });
wss.on('error', (error) => console.error(error));
const onConnect = (ctx) => {
    const path = ctx.extra.request.url;
    if (path.startsWith('/forbidden')) return false;
    if (path.startsWith('/private')) return ctx.connectionParams?.token === 'let-me-in';
    return true;
};
useServer({ schema, roots, onConnect }, wss);
wss.on('listening', () => console.log(`listening on ws://127.0.0.1:${wss.address().port}`));
process.on('SIGTERM', () => process.exit(0));
