"""wsbench fleet: a WebSocket echo server on ws4py, the seeds' Python library, with the
standard library's wsgiref server.

Usage: `.venv/bin/python server.py PORT`. Listens on 127.0.0.1:PORT and echoes every message
with its type (ws4py's EchoWebSocket: text stays text, binary stays binary); ws4py answers
pings with pongs and completes the closing handshake. A plain HTTP GET gets 200. Prints
`listening on ws://127.0.0.1:PORT` once ready. Exits on SIGTERM or SIGINT.

One process: the main thread accepts connections and does the HTTP upgrade (wsgiref serves one
request at a time), and ws4py's WebSocketManager thread reads every WebSocket with epoll and
echoes; the GIL lets only one of them run Python at a time, so it uses one core.

Settings that differ from the defaults: a listen backlog of 4096 (wsgiref's default of 5 drops
SYNs and stalls a connection ramp for seconds) and no access log line per request. ws4py has
no message size limit, so 16 MiB messages need no setting.
"""

import os
import signal
import sys
from wsgiref.simple_server import make_server

from ws4py.server.wsgirefserver import WebSocketWSGIRequestHandler, WSGIServer
from ws4py.server.wsgiutils import WebSocketWSGIApplication
from ws4py.websocket import EchoWebSocket


class Server(WSGIServer):
    request_queue_size = 4096


class RequestHandler(WebSocketWSGIRequestHandler):
    def log_message(self, format, *args):
        pass


websocket_app = WebSocketWSGIApplication(handler_cls=EchoWebSocket)


def app(environ, start_response):
    """Upgrades WebSocket requests; answers a plain HTTP request with 200."""
    if environ.get("HTTP_UPGRADE", "").lower() != "websocket":
        body = b"ok\n"
        start_response(
            "200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        )
        return [body]
    return websocket_app(environ, start_response)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    # The manager thread is not a daemon thread: leave at once on a signal.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    server = make_server(
        "127.0.0.1",
        port,
        server_class=Server,
        handler_class=RequestHandler,
        app=app,
    )
    server.initialize_websockets_manager()
    print(f"listening on ws://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
