"""Interop peer: drives a WebSocket echo server with the Python `websockets` library.

Run by crates/wsbench/tests/interop.rs against `wsbench serve` to check that a widely used
third-party client agrees with our server about framing, fragmentation, control frames and
the closing handshake. Usage: `python client.py ws://127.0.0.1:PORT` (or `wss://…`; TLS
certificates are not verified because `wsbench serve --tls` uses a self-signed one).

Prints one `ok …` line per check and exits 0; on the first failure prints `FAIL …` to stderr
and exits 1.
"""

import hashlib
import os
import ssl
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

# Seconds allowed for any single step (connect, one round trip, the closing handshake).
STEP_TIMEOUT = 30
MIB = 1024 * 1024


class CheckFailed(Exception):
    pass


def ok(msg):
    print(f"ok {msg}", flush=True)


def describe(data):
    if isinstance(data, str):
        return f"text of {len(data)} chars"
    return f"binary of {len(data)} bytes (sha256 {hashlib.sha256(data).hexdigest()[:16]})"


def round_trip(ws, name, payload):
    """Sends `payload`, expects the identical message (same type, same bytes) back."""
    start = time.monotonic()
    ws.send(payload)
    try:
        echoed = ws.recv(timeout=STEP_TIMEOUT)
    except TimeoutError:
        raise CheckFailed(f"{name}: no echo within {STEP_TIMEOUT}s") from None
    if type(echoed) is not type(payload):
        raise CheckFailed(
            f"{name}: sent {type(payload).__name__}, got {type(echoed).__name__} back"
        )
    if echoed != payload:
        raise CheckFailed(f"{name}: sent {describe(payload)}, got {describe(echoed)} back")
    ok(f"{name}: {describe(payload)} echoed in {time.monotonic() - start:.3f}s")


def run(url):
    ctx = None
    if url.startswith("wss://"):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    with connect(
        url,
        ssl=ctx,
        proxy=None,
        open_timeout=STEP_TIMEOUT,
        close_timeout=STEP_TIMEOUT,
        max_size=64 * MIB,
    ) as ws:
        ok(f"connected to {url} (extensions: {[e.name for e in ws.protocol.extensions]})")

        round_trip(ws, "text", "héllo wörld — ünïcödé ✓ 日本語 🦀")
        round_trip(ws, "binary", bytes(range(256)))
        round_trip(ws, "empty text", "")
        round_trip(ws, "binary 1 MiB", os.urandom(MIB))
        round_trip(ws, "binary 16 MiB", os.urandom(16 * MIB))

        # A text message sent as three fragments (continuation frames) must come back as
        # one reassembled message.
        fragments = ["fragmented ", "mëssage ", "reassembled"]
        ws.send(iter(fragments))
        echoed = ws.recv(timeout=STEP_TIMEOUT)
        if echoed != "".join(fragments):
            raise CheckFailed(f"fragmented text: got {echoed!r} back")
        ok(f"fragmented text: {len(fragments)} fragments reassembled into {echoed!r}")

        payload = b"ping-payload-\x00\xff"
        pong = ws.ping(payload)
        # websockets only sets the event for a pong whose payload matches this ping's.
        if not pong.wait(STEP_TIMEOUT):
            raise CheckFailed(f"ping: no pong with payload {payload!r} within {STEP_TIMEOUT}s")
        ok(f"ping: pong carried the payload {payload!r}")

        # Messages still flow after the control frame.
        round_trip(ws, "text after ping", "still open")

        ws.close(code=1000, reason="interop done")
        if not ws.wait_closed(STEP_TIMEOUT):
            raise CheckFailed("close: connection not closed within the timeout")
        if ws.protocol.close_rcvd is None:
            raise CheckFailed("close: server closed the TCP connection without a close frame")
        if ws.close_code != 1000:
            raise CheckFailed(
                f"close: sent code 1000, server answered {ws.close_code} "
                f"(reason {ws.close_reason!r})"
            )
        ok(f"close: server echoed close code {ws.close_code}")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} ws://HOST:PORT | wss://HOST:PORT", file=sys.stderr)
        return 2
    try:
        run(sys.argv[1])
    except CheckFailed as e:
        print(f"FAIL {e}", file=sys.stderr)
        return 1
    except ConnectionClosed as e:
        print(f"FAIL connection closed unexpectedly: {e!r}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - any error is a failed interop run
        print(f"FAIL {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
