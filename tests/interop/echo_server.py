"""Interop peer: a WebSocket echo server built on Python `websockets` (asyncio).

Run by crates/wsbench/tests/engine/compression.rs so that wsbench's client, with
`--compression deflate`, is checked against a widely used third-party server that negotiates
permessage-deflate by default (`compression="deflate"` is websockets' default; it is spelled
out here). Usage: `python echo_server.py` — listens on a free port of 127.0.0.1, echoes every
message with its type, and prints `listening on ws://127.0.0.1:PORT` once ready (the same line
as `wsbench serve`). Exits on SIGTERM or SIGINT, or when its stdin closes (so it never outlives
its parent).
"""

import asyncio
import os
import signal
import sys
import threading

from websockets.asyncio.server import serve


async def echo(ws):
    async for message in ws:
        await ws.send(message)


def exit_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)


async def serve_until_stopped(handler, **options):
    """Serves `handler` on a free port of 127.0.0.1, says so, and runs until a signal."""
    async with serve(handler, "127.0.0.1", 0, **options) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening on ws://127.0.0.1:{port}", flush=True)
        stop = asyncio.get_running_loop().create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.cancel)
        try:
            await stop
        except asyncio.CancelledError:
            pass


def run_peer(handler, **options):
    """The peers' main: serve until a signal or until stdin closes."""
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    asyncio.run(serve_until_stopped(handler, **options))


if __name__ == "__main__":
    run_peer(echo, compression="deflate", max_size=128 * 1024 * 1024, max_queue=None)
