"""Flow peer: a JSON-RPC 2.0 echo server, and a graphql-transport-ws subscription server, on
Python `websockets` (asyncio).

Run by crates/wsbench/tests/engine/flow.rs to drive `wsbench run --scenario FILE` flows
(scenario = "flow") against a real third-party server. Usage: `python jsonrpc_server.py` —
listens on a free port of 127.0.0.1 and prints `listening on ws://127.0.0.1:PORT` once ready.

- Without a subprotocol: every `{"jsonrpc":"2.0","id":N,"method":"echo","params":P}` is
  answered `{"jsonrpc":"2.0","id":N,"result":P}`. Each request is answered by its own task,
  requests with an even id after 5 ms, odd ones at once: pipelined requests are answered out
  of order, so only matching by id pairs them right. Another method gets a JSON-RPC error
  with the same id.
- With `graphql-transport-ws`: `connection_init` is answered `connection_ack`; a `subscribe`
  with id I gets three `{"id":I,"type":"next","payload":{"data":{"tick":K}}}` 2 ms apart,
  then `{"id":I,"type":"complete"}`; `ping` gets `pong`.

Exits on SIGTERM or SIGINT, or when its stdin closes (so it never outlives its parent).
"""

import asyncio
import json

from websockets.exceptions import ConnectionClosed

from echo_server import run_peer

GRAPHQL = "graphql-transport-ws"


async def answer(ws, request):
    request_id = request.get("id")
    if isinstance(request_id, int) and request_id % 2 == 0:
        await asyncio.sleep(0.005)
    if request.get("method") == "echo":
        reply = {"jsonrpc": "2.0", "id": request_id, "result": request.get("params")}
    else:
        reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
    try:
        await ws.send(json.dumps(reply))
    except ConnectionClosed:
        pass  # the client closed with this request still being answered


async def jsonrpc(ws):
    tasks = set()
    async for message in ws:
        task = asyncio.create_task(answer(ws, json.loads(message)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def subscription(ws, subscription_id):
    for tick in range(3):
        await asyncio.sleep(0.002)
        try:
            await ws.send(json.dumps({"id": subscription_id, "type": "next", "payload": {"data": {"tick": tick}}}))
        except ConnectionClosed:
            return
    try:
        await ws.send(json.dumps({"id": subscription_id, "type": "complete"}))
    except ConnectionClosed:
        pass


async def graphql(ws):
    tasks = set()
    async for message in ws:
        frame = json.loads(message)
        kind = frame.get("type")
        if kind == "connection_init":
            await ws.send(json.dumps({"type": "connection_ack"}))
        elif kind == "ping":
            await ws.send(json.dumps({"type": "pong"}))
        elif kind == "subscribe":
            task = asyncio.create_task(subscription(ws, frame.get("id")))
            tasks.add(task)
            task.add_done_callback(tasks.discard)


async def handler(ws):
    if ws.subprotocol == GRAPHQL:
        await graphql(ws)
    else:
        await jsonrpc(ws)


def choose(connection, offered):
    """graphql-transport-ws when offered; a client offering none gets JSON-RPC."""
    return GRAPHQL if GRAPHQL in offered else None


if __name__ == "__main__":
    run_peer(handler, select_subprotocol=choose, max_queue=None)
