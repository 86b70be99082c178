"""A plain Python `websockets` echo client, as a user would write one, for bench/clients.sh:
the leaderboard puts it beside wsbench, Artillery and the node `ws` client on the same server.
It must stay the obvious asyncio script (one task per connection, default event loop), not a
tuned one: it stands for what people measure with.

    python python-websockets-echo.py URL CONNECTIONS SECONDS [--warmup S] [--rate N]

Closed loop (default): each connection sends a 20-byte binary message and awaits its echo.
Open loop (--rate N): one task wakes every millisecond and sends what fell due since the start
(N per second over all connections, round-robin), whatever the replies. Latency is from the
actual send. It runs SECONDS after the last connection opened; the window that counts starts
WARMUP seconds after that. Prints one JSON line: own_total, own_rate (window), latency (µs).
"""

import argparse
import asyncio
import collections
import json
import time

from websockets.asyncio.client import connect

PAYLOAD = b"a" * 20


class Counts:
    def __init__(self):
        self.start = time.perf_counter()
        self.total = 0
        self.window_start = None
        self.window_count = 0
        self.latencies = []
        self.open = 0

    def now(self):
        return time.perf_counter() - self.start

    def received(self, sent_at):
        self.total += 1
        t = self.now()
        if self.window_start is not None and t >= self.window_start:
            self.window_count += 1
            self.latencies.append((t - sent_at) * 1e6)


async def closed_loop(ws, counts):
    while True:
        sent_at = counts.now()
        await ws.send(PAYLOAD)
        await ws.recv()
        counts.received(sent_at)


async def receiver(ws, sent, counts):
    async for _ in ws:
        counts.received(sent.popleft())


async def pacer(sockets, rate, counts):
    began, sent = counts.now(), 0
    while True:
        await asyncio.sleep(0.001)
        due = int((counts.now() - began) * rate)
        for _ in range(due - sent):
            ws, times = sockets[sent % len(sockets)]
            times.append(counts.now())
            await ws.send(PAYLOAD)
            sent += 1


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("connections", type=int)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--rate", type=float, default=0)
    args = parser.parse_args()
    counts = Counts()

    async def open_one():
        ws = await connect(args.url, compression=None, max_queue=None)
        counts.open += 1
        return ws

    sockets = await asyncio.gather(*(open_one() for _ in range(args.connections)))
    counts.window_start = counts.now() + args.warmup

    async def run():
        if args.rate:
            pairs = [(ws, collections.deque()) for ws in sockets]
            tasks = [receiver(ws, sent, counts) for ws, sent in pairs] + [pacer(pairs, args.rate, counts)]
        else:
            tasks = [closed_loop(ws, counts) for ws in sockets]
        await asyncio.gather(*tasks)

    try:
        await asyncio.wait_for(run(), timeout=args.seconds)
    except TimeoutError:
        pass
    end = counts.now()
    lat = sorted(counts.latencies)

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p * len(lat)))]) if lat else None

    measured = end - counts.window_start if counts.window_start is not None else 0
    print(json.dumps({
        "connected": counts.open,
        "own_total": counts.total,
        "own_rate": counts.window_count / measured if measured > 0 else None,
        "p50_us": pct(0.5), "p99_us": pct(0.99), "p999_us": pct(0.999),
    }), flush=True)


asyncio.run(main())
