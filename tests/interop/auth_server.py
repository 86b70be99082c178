"""Interop peer: a Python `websockets` echo server that guards its upgrade like a real
application endpoint, so wsbench's handshake and TLS options are tested against a third-party
server (crates/wsbench/tests/endpoint_options.rs).

    python auth_server.py [--bearer TOKEN] [--subprotocol NAME] [--record-header NAME]
                          [--record FILE] [--cert PEM --key PEM [--client-ca PEM]]

--bearer: refuse the upgrade with 401 unless `Authorization: Bearer TOKEN` is sent.
--subprotocol: refuse it with 403 unless NAME is offered in Sec-WebSocket-Protocol, and
  choose NAME.
--record-header/--record: append the value of that header of every upgrade request (one line
  each) to FILE; with TLS, also `sni NAME` and `tls VERSION` lines per connection.
--cert/--key: serve wss://; --client-ca: require a client certificate signed by that CA.

Listens on 127.0.0.1 port 0, prints `listening on ws[s]://127.0.0.1:PORT`, echoes every
message, and exits when its stdin closes (so it never outlives the test). It is the threaded
`websockets.sync` server: its blocking TLS sockets send OpenSSL's alert when a client
certificate is missing (asyncio's TLS closes without it), so the client can name the cause.
"""

import argparse
import http
import logging
import ssl
import sys
import threading

from websockets.sync.server import serve


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bearer")
    parser.add_argument("--subprotocol")
    parser.add_argument("--record-header")
    parser.add_argument("--record")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--client-ca")
    return parser.parse_args()


def record(path, line):
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def tls_context(args):
    if not args.cert:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(args.client_ca)

    def on_sni(sock, name, _context):
        record(args.record, f"sni {name}")

    context.sni_callback = on_sni
    return context


def make_process_request(args):
    def process_request(connection, request):
        if args.record_header:
            record(args.record, request.headers.get(args.record_header, "<missing>"))
        tls = connection.socket
        if isinstance(tls, ssl.SSLSocket):
            record(args.record, f"tls {tls.version()} alpn {tls.selected_alpn_protocol()}")
        if args.bearer and request.headers.get("Authorization") != f"Bearer {args.bearer}":
            return connection.respond(http.HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token\n")
        if args.subprotocol:
            offered = [
                p.strip()
                for value in request.headers.get_all("Sec-WebSocket-Protocol")
                for p in value.split(",")
            ]
            if args.subprotocol not in offered:
                return connection.respond(http.HTTPStatus.FORBIDDEN, "subprotocol chat required\n")
        return None

    return process_request


def echo(ws):
    for message in ws:
        ws.send(message)


def main():
    # wsbench drops connections whose upgrade it refuses (a wrong subprotocol): not news.
    logging.getLogger("websockets").setLevel(logging.CRITICAL)
    args = parse_args()
    context = tls_context(args)
    if context is not None:
        context.set_alpn_protocols(["http/1.1"])
    subprotocols = [args.subprotocol] if args.subprotocol else None
    with serve(
        echo,
        "127.0.0.1",
        0,
        ssl=context,
        subprotocols=subprotocols,
        process_request=make_process_request(args),
        compression=None,
    ) as server:
        port = server.socket.getsockname()[1]
        scheme = "wss" if context is not None else "ws"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"listening on {scheme}://127.0.0.1:{port}", flush=True)
        sys.stdin.read()
        server.shutdown()


if __name__ == "__main__":
    main()
