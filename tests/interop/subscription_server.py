"""Flow peer: a subscription server on Python `websockets` (asyncio) whose replies hand out an
id that later messages must carry, as real pub/sub and GraphQL servers do.

Run by crates/wsbench/tests/engine/flow_captures.rs to check flow captures (`capture = { sub =
"/sub" }` and `{var.sub}`) against a real server. Usage: `python subscription_server.py` —
listens on a free port of 127.0.0.1 and prints `listening on ws://127.0.0.1:PORT` once ready.

- `{"type":"subscribe","topic":T}` is answered `{"type":"subscribed","topic":T,"sub":S}`, S a
  fresh random id known only to this connection.
- `{"type":"publish","sub":S,"n":N}` is answered `{"type":"ack","sub":S,"n":N}` when S is one
  of this connection's ids, else `{"type":"error","n":N,"message":"unknown subscription S"}`.
- Anything else is answered `{"type":"error","message":"unknown message"}`.

Exits on SIGTERM or SIGINT, or when its stdin closes (so it never outlives its parent).
"""

import json
import secrets

from websockets.exceptions import ConnectionClosed

from echo_server import run_peer


def reply(frame, subscriptions):
    kind = frame.get("type") if isinstance(frame, dict) else None
    if kind == "subscribe":
        sub = secrets.token_hex(8)
        subscriptions.add(sub)
        return {"type": "subscribed", "topic": frame.get("topic"), "sub": sub}
    if kind == "publish":
        sub, n = frame.get("sub"), frame.get("n")
        if sub in subscriptions:
            return {"type": "ack", "sub": sub, "n": n}
        return {"type": "error", "n": n, "message": f"unknown subscription {sub}"}
    return {"type": "error", "message": "unknown message"}


async def handler(ws):
    subscriptions = set()
    try:
        async for message in ws:
            try:
                frame = json.loads(message)
            except ValueError:
                frame = None
            await ws.send(json.dumps(reply(frame, subscriptions)))
    except ConnectionClosed:
        pass  # a client that ends its run closes without a close frame


if __name__ == "__main__":
    run_peer(handler, max_queue=None)
