"""A SignalR hub for wsbench's `--protocol signalr` and the fleet, served by aiosignalr (PyPI,
0.1.1) on 127.0.0.1:PORT at /hub: the JSON hub protocol over WebSockets (and aiosignalr's
negotiate, Server-Sent Events and long polling beside it).

Hub methods: `Echo(payload)` returns its argument (an echo's completion); `Join(group)` adds
the caller to a group; `Publish(group, payload)` invokes `message(payload)` on the group's
members and completes with nothing; `Forbidden(group)` refuses a join, its completion carrying
the error "not allowed to join GROUP" (a rejected subscription). When WSBENCH_SIGNALR_TOKEN
is set, a request to /hub without `Authorization: Bearer TOKEN` (or `?access_token=TOKEN`,
as browsers send it) is refused 401 before the upgrade, as ASP.NET's [Authorize] does.
`POST /admin/disconnect?group=G&count=N` aborts N members of group G (in connection id
order), as a hub's `Context.Abort()` does, and answers how many it aborted;
`POST /admin/negotiations` answers how many negotiate POSTs the hub has answered.

`Ticks(count, interval_ms)` is a streaming method (an async generator, aiosignalr's way):
it yields `{"seq": N, "ts": MS}` from a ticker all its callers share (N counts from the
hub's start, MS its Unix time in milliseconds; the first call's `interval_ms` sets its pace),
`count` ticks (0: until cancelled), so that every caller sees the same ticks from the one
after its call on. `Broken_Ticks(count,
interval_ms)` yields as many, then fails (a completion with the error "the ticker broke").

WSBENCH_SIGNALR_NEGOTIATE makes the negotiate misbehave as servers do, for the tests:
`error` answers `{"error": …}`; `polling` offers long polling alone; `malformed` answers
text that is no JSON; `close` negotiates and then closes the connection (`Connection:
close`), so that the WebSocket needs a connection of its own; `redirect` answers a
negotiate without `Authorization: Bearer redirected` with a redirect to this hub with that
access token (as Azure SignalR Service does), and then requires that bearer of the
WebSocket too.

aiosignalr 0.1.1 writes every WebSocket frame binary, the JSON protocol's too; SignalR's
JSON protocol is text frames, and the official JavaScript client (@microsoft/signalr 10)
refuses a binary handshake answer ("Error parsing handshake response: TypeError:
textData.substring is not a function"). So this app sends a frame that is UTF-8 JSON ended by
the record separator as text. A method returns a result only when annotated with a return
type (aiosignalr's rule): `Echo` is.

aiosignalr also writes the headers of its MessagePack completions, stream items and
cancellations as the number 128 (`_EMPTY_HEADERS = 0x80` packed as an integer, 0xcc 0x80)
where the protocol has an empty map (0x80); the official JavaScript client refuses those
messages ("Invalid headers."). So this app sets that constant to an empty map. A MessagePack
frame is never sent as text: after its length prefix comes an array's marker (0x90-0x9f,
0xdc, 0xdd), which is no valid UTF-8 after the prefix's bytes.
"""

import asyncio
import os
import sys
import time

from aiohttp import web
from aiosignalr.errors import HubException
from aiosignalr.protocol import messagepack_protocol
from aiosignalr.server import Hub, ServerOptions, SignalRServer
from aiosignalr.server.aiohttp_server import _AiohttpRequest, _AiohttpSocket

GROUPS: dict[str, set[str]] = {}


async def _send_text_or_binary(self, data: bytes) -> None:
    if data.endswith(b"\x1e"):
        try:
            await self._ws.send_str(data.decode("utf-8"))
            return
        except UnicodeDecodeError:
            pass
    await self._ws.send_bytes(data)


_AiohttpSocket.send_bytes = _send_text_or_binary
messagepack_protocol._EMPTY_HEADERS = {}


class Ticker:
    """One tick every `interval` seconds, shared by every stream's caller."""

    def __init__(self) -> None:
        self.seq = 0
        self.changed = asyncio.Condition()
        self.task: asyncio.Task | None = None
        self.interval = 0.1

    def start(self, interval: float) -> None:
        if self.task is None:
            self.interval = interval
            self.task = asyncio.create_task(self.run())

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            async with self.changed:
                self.seq += 1
                self.changed.notify_all()

    async def after(self, seq: int) -> int:
        async with self.changed:
            await self.changed.wait_for(lambda: self.seq > seq)
            return self.seq


TICKER = Ticker()


class BenchHub(Hub):
    async def on_disconnected(self, exception) -> None:
        for members in GROUPS.values():
            members.discard(self.context.connection_id)

    async def echo(self, payload: object) -> object:
        return payload

    async def join(self, group: str) -> None:
        await self.groups.add(group)
        GROUPS.setdefault(group, set()).add(self.context.connection_id)

    async def forbidden(self, group: str) -> None:
        raise HubException(f"not allowed to join {group}")

    async def publish(self, group: str, payload: object) -> None:
        await self.clients.group(group).send("message", payload)

    async def ticks(self, count: int, interval_ms: int):
        TICKER.start(max(interval_ms, 1) / 1000)
        seq = TICKER.seq
        sent = 0
        while count <= 0 or sent < count:
            seq = await TICKER.after(seq)
            yield {"seq": seq, "ts": int(time.time() * 1000)}
            sent += 1

    async def broken_ticks(self, count: int, interval_ms: int):
        async for tick in self.ticks(count, interval_ms):
            yield tick
        raise HubException("the ticker broke")


def authorized(request: web.Request, token: str) -> bool:
    return (
        request.headers.get("Authorization") == f"Bearer {token}"
        or request.query.get("access_token") == token
    )


async def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    token = os.environ.get("WSBENCH_SIGNALR_TOKEN")
    server = SignalRServer(BenchHub, options=ServerOptions(maximum_parallel_invocations=16))
    app = server.create_application(path="/hub")

    @web.middleware
    async def bearer(request: web.Request, handler):
        if token is not None and request.path.startswith("/hub") and not authorized(request, token):
            return web.Response(status=401, text="Unauthorized\n")
        return await handler(request)

    app.middlewares.append(bearer)
    negotiations = 0
    mode = os.environ.get("WSBENCH_SIGNALR_NEGOTIATE", "")

    @web.middleware
    async def negotiate(request: web.Request, handler):
        nonlocal negotiations
        redirected = request.headers.get("Authorization") == "Bearer redirected"
        if not request.path.endswith("/negotiate"):
            if mode == "redirect" and request.path.startswith("/hub") and not redirected:
                return web.Response(status=401, text="the redirect's access token is missing\n")
            return await handler(request)
        negotiations += 1
        if mode == "error":
            return web.json_response({"error": "negotiation refused by the test hub"})
        if mode == "polling":
            body = {
                "negotiateVersion": 1,
                "connectionId": "c",
                "connectionToken": "t",
                "availableTransports": [{"transport": "LongPolling", "transferFormats": ["Text", "Binary"]}],
            }
            return web.json_response(body)
        if mode == "close":
            response = web.json_response(await server.handle_negotiate(_AiohttpRequest(request)))
            response.force_close()
            return response
        if mode == "malformed":
            return web.Response(text="<html>not a negotiate answer</html>")
        if mode == "redirect" and not redirected:
            url = f"http://{request.host}/hub"
            return web.json_response({"url": url, "accessToken": "redirected"})
        return await handler(request)

    app.middlewares.append(negotiate)

    async def negotiated(request: web.Request) -> web.Response:
        return web.Response(text=f"{negotiations}\n")

    app.router.add_post("/admin/negotiations", negotiated)

    async def disconnect(request: web.Request) -> web.Response:
        group = request.query.get("group", "")
        count = int(request.query.get("count", "1"))
        aborted = 0
        for connection_id in sorted(GROUPS.get(group, set())):
            if aborted == count:
                break
            ctx = server.get_connection(connection_id)
            if ctx is not None:
                await ctx.abort()
                aborted += 1
        return web.Response(text=f"{aborted}\n")

    app.router.add_post("/admin/disconnect", disconnect)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"listening on ws://127.0.0.1:{bound}/hub", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
