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
order), as a hub's `Context.Abort()` does, and answers how many it aborted.

aiosignalr 0.1.1 writes every WebSocket frame binary, the JSON protocol's too; SignalR's
JSON protocol is text frames, and the official JavaScript client (@microsoft/signalr 10)
refuses a binary handshake answer ("Error parsing handshake response: TypeError:
textData.substring is not a function"). So this app sends a frame that is UTF-8 JSON ended by
the record separator as text. A method returns a result only when annotated with a return
type (aiosignalr's rule): `Echo` is.
"""

import asyncio
import os
import sys

from aiohttp import web
from aiosignalr.errors import HubException
from aiosignalr.server import Hub, ServerOptions, SignalRServer
from aiosignalr.server.aiohttp_server import _AiohttpSocket

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
