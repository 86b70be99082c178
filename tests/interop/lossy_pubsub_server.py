"""Interop peer: a pub/sub server (docs/protocols.md) on Python's `websockets` that is wrong on
purpose, so the pubsub scenario is tested to find exactly what a server loses or repeats
(crates/wsbench/tests/engine/pubsub.rs).

    python lossy_pubsub_server.py [--drop-conn N] [--duplicate-conn M] [--reorder-conn K]
                                  [--deliveries-per-sec R] [--shape as-sent|payload|wrapped]

Each connection is named by its `X-Conn` upgrade header (wsbench sends it with
`--header "X-Conn: {conn}"`). --drop-conn: connection N is acknowledged its subscription but
gets none of the publishes. --duplicate-conn: connection M gets every publish twice.
--reorder-conn: connection K gets its publishes in swapped pairs (one held until the next has
been sent, or for 50 ms when no next comes), none lost. Everyone
else gets every publish once, unchanged, with `broadcast`. --deliveries-per-sec: a slow server
that queues every delivery and sends at most R per second, so it falls behind a higher rate.
--shape: what a delivery is, as applications forward it: the publish `as-sent` (the default),
the `payload` alone (its fields without `pub`, written again with spaces after `,` and `:`),
or the payload `wrapped` in an envelope of the application's own that has an `id` too.

Listens on 127.0.0.1 port 0, prints `listening on ws://127.0.0.1:PORT`, and exits when its
stdin closes (so it never outlives the test).
"""

import argparse
import asyncio
import contextlib
import json
import sys

from websockets.asyncio.server import broadcast, serve
from websockets.exceptions import ConnectionClosed

TOPICS = {}


class Swapper:
    """Sends one connection's messages in swapped pairs."""

    def __init__(self):
        self.held = None

    def send(self, peer, message):
        if self.held is None:
            self.held = (peer, message)
            asyncio.get_running_loop().call_later(0.05, self.flush, message)
            return
        broadcast([peer], message)
        self.flush(self.held[1])

    def flush(self, message):
        if self.held is not None and self.held[1] is message:
            broadcast([self.held[0]], message)
            self.held = None


def delivery(shape, command, message):
    """What subscribers get of the publish `command` (as it came: `message`)."""
    if shape == "as-sent":
        return message
    payload = {key: value for key, value in command.items() if key != "pub"}
    if shape == "payload":
        return json.dumps(payload)
    return json.dumps({"id": "app-1", "event": "tick", "data": [payload]}, separators=(",", ":"))


def handler(drop, duplicate, reorder, queue, shape):
    swapper = Swapper()

    async def pubsub(ws):
        name = ws.request.headers.get("X-Conn")
        try:
            with contextlib.suppress(ConnectionClosed):
                async for message in ws:
                    await on_message(ws, name, message)
        finally:
            for subscribers in TOPICS.values():
                subscribers.pop(ws, None)

    async def on_message(ws, name, message):
        command = json.loads(message) if isinstance(message, str) else None
        if not isinstance(command, dict):
            await ws.send(message)
        elif isinstance(command.get("sub"), str):
            TOPICS.setdefault(command["sub"], {})[ws] = name
            await ws.send(json.dumps({"subscribed": command["sub"]}, separators=(",", ":")))
        elif isinstance(command.get("pub"), str):
            subscribers = TOPICS.get(command["pub"], {})
            message = delivery(shape, command, message)
            receivers = [peer for peer, peer_name in subscribers.items() if peer_name != drop]
            if reorder is not None:
                receivers = [peer for peer in receivers if subscribers[peer] != reorder]
                for peer, peer_name in subscribers.items():
                    if peer_name == reorder:
                        swapper.send(peer, message)
            receivers += [peer for peer, peer_name in subscribers.items() if peer_name == duplicate]
            if queue is None:
                broadcast(receivers, message)
            else:
                for peer in receivers:
                    queue.put_nowait((peer, message))
        else:
            await ws.send(message)

    return pubsub


async def deliver_slowly(queue, per_sec):
    """Sends the queued deliveries, at most `per_sec` a second."""
    while True:
        peer, message = await queue.get()
        with contextlib.suppress(ConnectionClosed):
            await peer.send(message)
        await asyncio.sleep(1 / per_sec)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--drop-conn")
    parser.add_argument("--duplicate-conn")
    parser.add_argument("--reorder-conn")
    parser.add_argument("--deliveries-per-sec", type=float)
    parser.add_argument("--shape", choices=["as-sent", "payload", "wrapped"], default="as-sent")
    args = parser.parse_args()
    queue = asyncio.Queue() if args.deliveries_per_sec else None
    if queue is not None:
        slow = asyncio.create_task(deliver_slowly(queue, args.deliveries_per_sec))
    async with serve(
        handler(args.drop_conn, args.duplicate_conn, args.reorder_conn, queue, args.shape),
        "127.0.0.1",
        0,
        compression=None,
        ping_interval=None,
        backlog=4096,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening on ws://127.0.0.1:{port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main())
