"""wsbench fleet: a WebSocket echo server over HTTP/3 (RFC 9220) in Python, hypercorn with
aioquic running a tiny ASGI application. Usage: `python server.py PORT`.

Listens on 127.0.0.1:PORT twice: WebSockets over HTTP/1.1 on the TCP port (plain, `ws://`)
and WebSockets over HTTP/3 on the UDP port of the same number (QUIC, so always TLS: a
self-signed certificate for 127.0.0.1 and localhost made at start, `wss://` with
`--insecure`; or the certificate and key that WSBENCH_TLS_CERT and WSBENCH_TLS_KEY name,
as `wsbench compare` gives them). aioquic advertises SETTINGS_ENABLE_CONNECT_PROTOCOL; hypercorn takes each
extended CONNECT as a WebSocket. Every message is echoed with its type; a plain HTTP GET gets
200. One event loop.

SIGUSR1 prints `echoed N messages, M connections open` (the count of echoes sent, as
`wsbench serve` prints it), so a test can compare the server's count with the client's round
trips. Prints `listening on ws://127.0.0.1:PORT` once both sockets are bound; SIGTERM or
SIGINT stops it.

hypercorn 0.18.0 as shipped, but for one fix (`handle_h3`: without it a close frame and its
stream's end arriving together end the whole HTTP/3 server) and a deeper datagram queue
(`UDP_QUEUE`, 10 as shipped). Left as shipped: an HTTP/3
WebSocket that the client closes is dropped by hypercorn without telling the application
(no `websocket.disconnect` comes), so its task stays and `connections open` keeps counting it.
"""

import asyncio
import datetime
import ipaddress
import os
import signal
import socket
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from aioquic.h3.events import DataReceived, HeadersReceived
from hypercorn.asyncio import serve
from hypercorn.asyncio.udp_server import UDPServer
from hypercorn.config import Config
from hypercorn.protocol.events import Body, EndBody
from hypercorn.protocol.h3 import H3Protocol

# Large enough for 16 MiB messages, capped like wsbench serve's default.
MAX_MESSAGE = 128 * 1024 * 1024

echoed = 0
open_connections = 0


async def app(scope, receive, send):
    """The ASGI application: WebSocket echo, 200 to HTTP, lifespan accepted."""
    global echoed, open_connections
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    elif scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok\n"})
    elif scope["type"] == "websocket":
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        open_connections += 1
        try:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    break
                echoed += 1
                if message.get("bytes") is not None:
                    await send({"type": "websocket.send", "bytes": message["bytes"]})
                else:
                    await send({"type": "websocket.send", "text": message["text"]})
        finally:
            open_connections -= 1


async def handle_h3(self, quic_event):
    """hypercorn 0.18.0's `H3Protocol.handle`, with each stream looked up once per event.

    A client that ends a WebSocket's stream right after its close frame (as RFC 9220 has it)
    may have both arrive in one DataReceived: handling the close frame closes the stream and
    drops it from `self.streams`, and hypercorn's second lookup, for the stream's end, raised
    KeyError. That ended hypercorn's whole HTTP/3 server, cancelling every application task:
    every WebSocket still open on any QUIC connection was closed with 1011 and the UDP port
    answered no more. (Its HTTP/2 code guards the same lookup.)
    """
    for event in self.connection.handle_event(quic_event):
        if isinstance(event, HeadersReceived):
            if not self.context.terminated.is_set():
                await self._create_stream(event)
                if event.stream_ended:
                    await self.streams[event.stream_id].handle(EndBody(stream_id=event.stream_id))
        elif isinstance(event, DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream is None:
                continue
            await stream.handle(Body(stream_id=event.stream_id, data=event.data))
            if event.stream_ended:
                await stream.handle(EndBody(stream_id=event.stream_id))


H3Protocol.handle = handle_h3

# Datagrams hypercorn queues between its UDP socket and its QUIC layer: hypercorn drops what
# comes past 10, so a burst of handshakes or a busy moment lost packets that QUIC then had to
# resend after its timers (handshakes and replies seconds late). A deep queue, as the fleet's
# TCP servers get a deep listen backlog.
UDP_QUEUE = 4096
_udp_init = UDPServer.__init__


def _udp_server_init(self, *args, **kwargs):
    _udp_init(self, *args, **kwargs)
    self.protocol_queue = asyncio.Queue(UDP_QUEUE)


UDPServer.__init__ = _udp_server_init


def self_signed(folder):
    """A certificate and key for 127.0.0.1 and localhost, as PEM files in `folder`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(certfile, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(keyfile, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return certfile, keyfile


def bound(port):
    """Whether both the TCP and the UDP port are taken (by this server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        if tcp.connect_ex(("127.0.0.1", port)) != 0:
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        try:
            udp.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


async def main(port, folder):
    config = Config()
    if os.environ.get("WSBENCH_TLS_CERT"):
        # `wsbench compare` made this certificate for its rows over HTTP/3, and trusts it alone.
        config.certfile, config.keyfile = os.environ["WSBENCH_TLS_CERT"], os.environ["WSBENCH_TLS_KEY"]
    else:
        config.certfile, config.keyfile = self_signed(folder)
    config.bind = []
    config.insecure_bind = [f"127.0.0.1:{port}"]
    config.quic_bind = [f"127.0.0.1:{port}"]
    config.backlog = 4096
    config.websocket_max_message_size = MAX_MESSAGE
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for name in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(name, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, lambda: print(
        f"echoed {echoed} messages, {open_connections} connections open", flush=True))
    server = asyncio.ensure_future(serve(app, config, shutdown_trigger=stop.wait))
    while not bound(port) and not server.done():
        await asyncio.sleep(0.05)
    if not server.done():
        print(f"listening on ws://127.0.0.1:{port}", flush=True)
    await server


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="wsbench-hypercorn-") as folder:
        asyncio.run(main(int(sys.argv[1]), folder))
