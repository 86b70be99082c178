"""wsbench fleet: a WebSocket echo server on Python's `websockets` library (asyncio).

Usage: `.venv/bin/python server.py PORT`. Listens on 127.0.0.1:PORT on one asyncio event loop
(one process, one thread), echoes every message with its type (str stays text, bytes stay
binary); `websockets` answers pings with pongs and completes the closing handshake. A plain
HTTP GET gets 200. Prints `listening on ws://127.0.0.1:PORT` once ready. Exits on SIGTERM or
SIGINT.

Settings that differ from the library's defaults, each to make it a plain echo server
comparable with the others: no permessage-deflate (on by default), no keepalive pings (by
default the server pings every 20 s and drops a client that is too busy to answer in 20 s),
messages up to 128 MiB (default 1 MiB), and a listen backlog of 4096 (default 100).
"""

import asyncio
import http
import json
import os
import signal
import sys

from websockets.asyncio.server import broadcast, serve
from websockets.exceptions import ConnectionClosed

# Large enough for 16 MiB messages, capped like wsbench serve's default.
MAX_MESSAGE = 128 * 1024 * 1024


async def echo(ws):
    try:
        async for message in ws:
            await ws.send(message)
    except ConnectionClosed:
        # A protocol error or a dropped peer ends only this connection.
        pass


# Topic name → the set of its subscribed connections (pub/sub mode).
TOPICS = {}


async def pubsub(ws):
    """`WSBENCH_PUBSUB=1`: the pub/sub protocol of wsbench's docs/protocols.md. A publish is
    forwarded unchanged with websockets' `broadcast` (one encoded frame for all subscribers)."""
    subscribed = []
    try:
        async for message in ws:
            command = None
            if isinstance(message, str):
                try:
                    command = json.loads(message)
                except ValueError:
                    command = None
            if isinstance(command, dict) and isinstance(command.get("sub"), str):
                TOPICS.setdefault(command["sub"], set()).add(ws)
                subscribed.append(command["sub"])
                await ws.send(json.dumps({"subscribed": command["sub"]}, separators=(",", ":")))
            elif isinstance(command, dict) and isinstance(command.get("pub"), str):
                broadcast(TOPICS.get(command["pub"], ()), message)
            else:
                await ws.send(message)
    except ConnectionClosed:
        pass
    finally:
        for topic in subscribed:
            TOPICS[topic].discard(ws)


def process_request(connection, request):
    """Answers a plain HTTP request (no WebSocket upgrade) with 200 instead of 426."""
    if request.headers.get("Upgrade", "").lower() != "websocket":
        return connection.respond(http.HTTPStatus.OK, "ok\n")
    return None


async def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)

    server = await serve(
        pubsub if os.environ.get("WSBENCH_PUBSUB") == "1" else echo,
        "127.0.0.1",
        port,
        process_request=process_request,
        # `WSBENCH_DEFLATE=1` (set by `wsbench compare --compression deflate`): websockets'
        # own default, permessage-deflate; off otherwise for the plain echo comparisons.
        compression="deflate" if os.environ.get("WSBENCH_DEFLATE") == "1" else None,
        max_size=MAX_MESSAGE,
        ping_interval=None,
        backlog=4096,
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on ws://127.0.0.1:{bound}", flush=True)

    await stop
    # Close with 1001 "going away", but do not wait long for peers to answer.
    server.close()
    try:
        await asyncio.wait_for(server.wait_closed(), 1.0)
    except TimeoutError:
        pass


if __name__ == "__main__":
    asyncio.run(main())
