// A small graphql-ws application with its own web page, for recording a real browser session
// (crates/wsbench/tests/recorded_browser.rs, through crates/testpeers): the page loads the
// official graphql-ws client (its UMD build from this folder's node_modules), opens one
// WebSocket to the URL its `ws` query parameter names, asks `hello`, subscribes to five
// quotes, lists them and closes. The server counts, at the WebSocket level, the connections
// it accepted and the messages it received and sent, so a replay's figures can be checked
// against the server's own.
//   GET /?ws=URL          the page
//   GET /graphql-ws.js    the client library
//   GET /counts           {"connections":N,"received":N,"sent":N} since start
//   ws  /graphql          graphql-transport-ws: query { hello(name) },
//                         subscription { quotes(symbol, count) { symbol seq price } }
// Usage: node graphql_app_server.js PORT (0: a free port). Prints `listening on
// ws://127.0.0.1:PORT` once listening; exits on SIGTERM.
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const { WebSocketServer } = require('ws');
const { useServer } = require('graphql-ws/use/ws');
const { buildSchema } = require('graphql');

const schema = buildSchema(`
  type Query { hello(name: String!): String! }
  type Quote { symbol: String!, seq: Int!, price: Float! }
  type Subscription { quotes(symbol: String!, count: Int!): Quote! }
`);
const roots = {
    query: { hello: ({ name }) => `Hello, ${name}` },
    subscription: {
        quotes: async function* ({ symbol, count }) {
            for (let seq = 1; seq <= Math.min(count, 100); seq++) {
                yield { quotes: { symbol, seq, price: 100 + seq / 4 } };
            }
        },
    },
};

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Quotes</title>
<script src="/graphql-ws.js"></script></head>
<body><h1 id="hello">…</h1><ul id="quotes"></ul>
<script>
const url = new URLSearchParams(location.search).get('ws');
const client = graphqlWs.createClient({ url, lazy: false, retryAttempts: 0 });
const run = (query) => new Promise((resolve, reject) => {
  const results = [];
  client.subscribe({ query }, { next: (r) => results.push(r), error: reject, complete: () => resolve(results) });
});
(async () => {
  try {
    const hello = await run('query { hello(name: "browser") }');
    document.getElementById('hello').textContent = hello[0].data.hello;
    const quotes = await run('subscription { quotes(symbol: "WSB", count: 5) { symbol seq price } }');
    for (const quote of quotes) {
      const item = document.createElement('li');
      item.textContent = quote.data.quotes.symbol + ' ' + quote.data.quotes.price;
      document.getElementById('quotes').append(item);
    }
    window.appResult = { hello: hello[0].data.hello, quotes: quotes.length };
  } catch (error) {
    window.appResult = { error: String(error && (error.reason || error.message || JSON.stringify(error))) };
  }
  await client.dispose();
  window.appDone = true;
})();
</script></body></html>
`;
const CLIENT = path.join(path.dirname(require.resolve('graphql-ws/package.json')), 'umd/graphql-ws.min.js');

const counts = { connections: 0, received: 0, sent: 0 };
const httpServer = http.createServer((request, response) => {
    const route = new URL(request.url, 'http://x').pathname;
    if (route === '/') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end(PAGE);
    } else if (route === '/graphql-ws.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' });
        response.end(fs.readFileSync(CLIENT));
    } else if (route === '/counts') {
        const body = JSON.stringify(counts);
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        response.end(body);
    } else {
        response.writeHead(404);
        response.end();
    }
});
const wss = new WebSocketServer({ server: httpServer, path: '/graphql' });
wss.on('connection', (socket) => {
    counts.connections++;
    socket.on('message', () => counts.received++);
    const send = socket.send.bind(socket);
    socket.send = (...args) => {
        counts.sent++;
        return send(...args);
    };
});
useServer({ schema, roots }, wss);
httpServer.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
    console.log(`listening on ws://127.0.0.1:${httpServer.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
