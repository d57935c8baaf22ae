"""A scripted xiaozhi server on 127.0.0.1 for firmware tests.

It speaks the real wire protocol over a real WebSocket (and the OTA
answer over real HTTP): it answers the device's hello, then acts as the
MCP client like the product's server does (initialize, then tools/list
following nextCursor to the end), and lets a test drive the rest.

    async with WireServer(answer_hello=True) as srv:
        srv.ws_url, srv.ota_url                  # put them in the device config
        conn = await srv.next_connection()       # after the device's hello
        await conn.mcp_ready                     # every tools/list page read
        reply = await conn.call_tool("self.mp3.play", {"name": "a.mp3"})
        await conn.send_json(proto.tts("start", conn.session_id))
        await conn.send_garbage_frame()          # a frame no client may accept
        await conn.wait_json("listen", state="start")
        await srv.kill()                         # its process dies: connections cut, port closed
        await srv.revive()                       # another one, on a new port the OTA answer names

Every message the device sends is kept (conn.received) with its arrival
time; binary frames are kept in conn.audio.
"""
import asyncio
import json
import time

from aiohttp import web
from websockets.asyncio.server import serve

from xiaozhi_server import protocol as proto

LIST_IDS = 1
CALL_IDS = 10000


class DeviceConnection:
    def __init__(self, ws, server):
        self.ws = ws
        self.server = server
        self.headers = {k: ws.request.headers.get(k) for k in (
            "Authorization", "Protocol-Version", "Device-Id", "Client-Id")}
        self.session_id = "s%d" % (len(server.connections) + 1)
        self.received = []      # (t, msg)
        self.audio = []         # (t, bytes)
        self.pages = []         # (cursor sent, result received)
        self.tools = []
        self.mcp_ready = asyncio.get_running_loop().create_future()
        self.hello = None
        self.closed = asyncio.Event()
        self._pending = {}
        self._next_list = LIST_IDS
        self._next_call = CALL_IDS
        self._changed = asyncio.Event()

    # ---- sending ----

    async def send_json(self, msg):
        await self.ws.send(proto.encode(msg))

    async def send_audio(self, packet, version=1):
        await self.ws.send(packet if version == 1 else proto.pack_frame(version, packet))

    async def send_garbage_frame(self):
        """Raw bytes of a WebSocket frame with the reserved bits set and a
        bogus opcode: RFC 6455 says the client must fail the connection."""
        self.ws.transport.write(b"\xf3\x05garbl")

    async def close(self, code=1000, reason=""):
        await self.ws.close(code, reason)

    async def request(self, method, params, call=False, timeout=10):
        if call:
            rid, self._next_call = self._next_call, self._next_call + 1
        else:
            rid, self._next_list = self._next_list, self._next_list + 1
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        await self.send_json(proto.mcp(proto.rpc_request(rid, method, params), session_id=self.session_id))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(rid, None)

    async def call_tool(self, name, arguments, timeout=10):
        """The device's whole JSON-RPC answer (result or error) to tools/call."""
        return await self.request("tools/call", {"name": name, "arguments": arguments},
                                  call=True, timeout=timeout)

    # ---- receiving ----

    async def wait_json(self, type_, timeout=10, since=0, **fields):
        """The first message of `type_` with these fields received after `since`."""
        deadline = time.monotonic() + timeout
        while True:
            for t, m in self.received:
                if t >= since and m.get("type") == type_ and all(m.get(k) == v for k, v in fields.items()):
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s %r within %s s; got %r" % (
                    type_, fields, timeout, [m for _, m in self.received]))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    def _note(self, msg):
        self.received.append((time.monotonic(), msg))
        self._changed.set()

    async def _mcp_start(self):
        try:
            await self.request("initialize", {"protocolVersion": proto.MCP_PROTOCOL_VERSION,
                                              "capabilities": {},
                                              "clientInfo": {"name": "wire-server", "version": "1"}})
            cursor = None
            for _ in range(20):
                params = {"withUserTools": False}
                if cursor:
                    params["cursor"] = cursor
                page = await self.request("tools/list", params)
                self.pages.append((cursor, page))
                result = page.get("result") or {}
                self.tools.extend(t["name"] for t in result.get("tools", []))
                cursor = result.get("nextCursor")
                if not cursor:
                    break
            self.mcp_ready.set_result(self.tools)
        except Exception as e:
            if not self.mcp_ready.done():
                self.mcp_ready.set_exception(e)

    async def run(self):
        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    self.audio.append((time.monotonic(), message))
                    continue
                msg = json.loads(message)
                self._note(msg)
                if msg.get("type") == "hello" and self.hello is None:
                    self.hello = msg
                    if not self.server.answer_hello:
                        continue
                    await self.send_json(proto.hello_server(self.session_id, {
                        "format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60}))
                    self.server._ready.put_nowait(self)
                    if (msg.get("features") or {}).get("mcp"):
                        asyncio.get_running_loop().create_task(self._mcp_start())
                elif msg.get("type") == "mcp":
                    p = msg["payload"]
                    fut = self._pending.get(p.get("id"))
                    if "method" not in p and fut is not None and not fut.done():
                        fut.set_result(p)
        except Exception:
            pass
        finally:
            self.closed.set()
            self._changed.set()


class WireServer:
    def __init__(self, answer_hello=True):
        self.answer_hello = answer_hello
        self.connections = []
        self._ready = asyncio.Queue()
        self._attempts = asyncio.Queue()
        self._ws = None
        self._http = None
        self.ws_url = self.ota_url = None
        self.ota_calls = []
        self.server_time_ms = 1_700_000_000_000

    async def __aenter__(self):
        await self.revive()
        app = web.Application()
        app.router.add_post("/xiaozhi/ota/", self._ota)
        self._http = web.AppRunner(app, access_log=None)
        await self._http.setup()
        site = web.TCPSite(self._http, "127.0.0.1", 0)
        await site.start()
        self.ota_url = "http://127.0.0.1:%d/xiaozhi/ota/" % site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        if self._ws is not None:
            self._ws.close()
            await self._ws.wait_closed()
        await self._http.cleanup()

    async def kill(self):
        """As when the server process is killed -9: every connection is cut
        without a Close frame and nothing listens on its port any more
        (the OTA answer still names it until revive())."""
        ws, self._ws = self._ws, None
        ws.close(close_connections=False)
        for conn in self.connections:
            conn.ws.transport.abort()
        await ws.wait_closed()

    async def revive(self):
        """A server on a new port (another node); OTA answers name it."""
        self._ws = await serve(self._handler, "127.0.0.1", 0)
        port = self._ws.sockets[0].getsockname()[1]
        self.ws_url = "ws://127.0.0.1:%d/xiaozhi/v1/" % port

    async def _ota(self, request):
        self.ota_calls.append((dict(request.headers), await request.json()))
        body = proto.ota_response({"timestamp": self.server_time_ms, "timezone_offset": 480},
                                  {"version": "0.1.0", "url": ""},
                                  {"url": self.ws_url, "token": "test-token"})
        return web.json_response(body)

    async def _handler(self, ws):
        conn = DeviceConnection(ws, self)
        self.connections.append(conn)
        self._attempts.put_nowait(conn)
        await conn.run()

    async def next_connection(self, timeout=15):
        """The next connection whose hello was answered."""
        return await asyncio.wait_for(self._ready.get(), timeout)

    async def next_attempt(self, timeout=15):
        """The next connection at all (hello answered or not)."""
        return await asyncio.wait_for(self._attempts.get(), timeout)
