"""A test device that speaks only the wire protocol (WebSocket + Opus).

It stands in for the board in server tests: it sends the same hello,
listen, abort and binary frames a stock xiaozhi device sends, serves MCP
tools (initialize, paged tools/list, tools/call) like the device's tool
server, and records everything the server sends with arrival times.

Wire-level on purpose: its subject is the server's WebSocket protocol as
any xiaozhi device speaks it (stock firmware, other clients, malformed or
hostile frames), with the test choosing every frame. What our board does
end to end is the firmware's own, run as a process (testkit/firmware_process.py).

    async with WireDevice(url, tools={"self.get_device_status": lambda a: {...}}) as dev:
        await dev.hello()
        await dev.say_pcm(pcm16k)                  # Opus frames at real-time pace
        stt = await dev.wait_json("stt")
        await dev.wait_json("tts", state="stop")
        dev.audio_after(t)                         # Opus packets received after t
"""
import asyncio
import json
import time

import opuslib
import websockets

from xiaozhi_server import protocol as proto

UP_RATE = 16000
FRAME = 960  # 60 ms at 16 kHz


def opus_frames(pcm16k, frame=FRAME):
    """16 kHz int16 PCM -> 60 ms Opus packets, as the device's encoder makes them."""
    enc = opuslib.Encoder(UP_RATE, 1, opuslib.APPLICATION_VOIP)
    enc.complexity = 0
    n = frame * 2
    if len(pcm16k) % n:
        pcm16k = pcm16k + bytes(n - len(pcm16k) % n)
    return [enc.encode(pcm16k[i:i + n], frame) for i in range(0, len(pcm16k), n)]


def decode_down(packets, rate=24000):
    """Downstream Opus packets -> 24 kHz PCM."""
    dec = opuslib.Decoder(rate, 1)
    return b"".join(dec.decode(bytes(p), rate * 60 // 1000) for p in packets)


class WireDevice:
    def __init__(self, url, device_id="aa:bb:cc:00:00:01", token=None, version=1, tools=None,
                 page_limit=2, mcp=True, headers=None):
        self.url = url
        self.device_id = device_id
        self.token = token
        self.version = version
        self.tools = dict(tools or {})       # name -> fn(args) -> value (or raise)
        self.page_limit = page_limit         # tools per tools/list page
        self.mcp = mcp
        self.extra_headers = dict(headers or {})
        self.ws = None
        self.json = []        # (t, msg)
        self.audio = []       # (t, opus packet)
        self.tool_calls = []  # (name, arguments)
        self.list_cursors = []
        self.closed = None    # (code, reason) once the server closed
        self._event = asyncio.Event()
        self._reader = None
        self.session_id = None

    async def __aenter__(self):
        await self.connect()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def connect(self):
        headers = {"Device-Id": self.device_id, "Client-Id": "test-client",
                   "Protocol-Version": str(self.version)}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        headers.update(self.extra_headers)
        self.ws = await websockets.connect(self.url, additional_headers=headers, max_size=2 ** 20)
        self._reader = asyncio.create_task(self._read())
        return self

    async def close(self):
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 5)
            except (asyncio.TimeoutError, Exception):
                self._reader.cancel()

    # ---- sending ----

    async def send_json(self, msg):
        await self.ws.send(json.dumps(msg, ensure_ascii=False))

    async def hello(self, timeout=10):
        ap = {"format": "opus", "sample_rate": UP_RATE, "channels": 1, "frame_duration": 60}
        feats = {"mcp": True} if self.mcp else {}
        await self.send_json(proto.hello_device(self.version, "websocket", ap, features=feats))
        msg = await self.wait_json("hello", timeout=timeout)
        self.session_id = msg["session_id"]
        return msg

    async def send_audio(self, packet):
        data = packet if self.version == 1 else proto.pack_frame(self.version, packet)
        await self.ws.send(data)

    async def say_pcm(self, pcm16k, pace=0.06, tail_ms=900):
        """Stream speech as Opus frames, then `tail_ms` of silence, at `pace` s per frame."""
        packets = opus_frames(pcm16k + bytes(2 * UP_RATE * tail_ms // 1000))
        for p in packets:
            await self.send_audio(p)
            if pace:
                await asyncio.sleep(pace)
        return len(packets)

    async def listen_start(self, mode="auto"):
        await self.send_json(proto.listen(proto.LISTEN_START, session_id=self.session_id, mode=mode))

    async def detect(self, text):
        await self.send_json(proto.listen(proto.LISTEN_DETECT, session_id=self.session_id, text=text))

    async def abort(self, reason=None):
        await self.send_json(proto.abort(session_id=self.session_id, reason=reason))

    # ---- receiving ----

    async def _read(self):
        try:
            async for m in self.ws:
                now = time.monotonic()
                if isinstance(m, bytes):
                    _t, _ts, payload = proto.unpack_frame(self.version, m)
                    self.audio.append((now, bytes(payload)))
                else:
                    msg = json.loads(m)
                    self.json.append((now, msg))
                    if msg.get("type") == "hello":
                        self.session_id = msg.get("session_id")
                    if msg.get("type") == "mcp":
                        await self._serve_mcp(msg["payload"])
                self._event.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            rcvd = self.ws.protocol.close_rcvd
            self.closed = (rcvd.code, rcvd.reason) if rcvd else (None, None)
            self._event.set()

    async def request(self, method, params, timeout=10):
        """A JSON-RPC request from the device to the server (e.g. app/start_task);
        returns the response payload."""
        self._rpc_n = getattr(self, "_rpc_n", 0) + 1
        rid = "dev-%d" % self._rpc_n
        await self._mcp_reply(proto.rpc_request(rid, method, params))
        _t, msg = await self.wait_for(lambda: next(((t, m) for t, m in self.json if m.get("type") == "mcp"
                                                    and m["payload"].get("id") == rid), None), timeout)
        return msg["payload"]

    async def start_task(self, app_id, task_id, source, params=None, timeout=10):
        return await self.request(proto.METHOD_APP_START_TASK,
                                  proto.app_start_task(app_id, task_id, source, params=params), timeout)

    async def _serve_mcp(self, p):
        if "method" not in p:
            return
        rid, method, params = p.get("id"), p["method"], p.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "wire-device", "version": "1"}}
        elif method == "tools/list":
            self.list_cursors.append(params.get("cursor"))
            decls = [d for d in proto.device_tools() if d["name"] in self.tools]
            decls += [{"name": n, "description": "test tool " + n, "inputSchema": {"type": "object", "properties": {}}}
                      for n in self.tools if n not in proto.DEVICE_TOOL_NAMES]
            start = 0
            if params.get("cursor"):
                start = [d["name"] for d in decls].index(params["cursor"])
            page = decls[start:start + self.page_limit]
            result = {"tools": page}
            if start + self.page_limit < len(decls):
                result["nextCursor"] = decls[start + self.page_limit]["name"]
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            self.tool_calls.append((name, args))
            fn = self.tools.get(name)
            if fn is None:
                await self._mcp_reply({"jsonrpc": "2.0", "id": rid, "error": {"message": "Unknown tool: %s" % name}})
                return
            try:
                result = proto.tool_result(fn(args))
            except Exception as e:
                await self._mcp_reply({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": str(e)}})
                return
        else:
            await self._mcp_reply(proto.rpc_error(rid, proto.RPC_METHOD_NOT_FOUND, "no " + method))
            return
        await self._mcp_reply(proto.rpc_result(rid, result))

    async def _mcp_reply(self, payload):
        await self.send_json({"session_id": self.session_id, "type": "mcp", "payload": payload})

    def find(self, type_, since=0.0, **fields):
        for t, m in self.json:
            if t >= since and m.get("type") == type_ and all(m.get(k) == v for k, v in fields.items()):
                return t, m
        return None

    async def wait_for(self, pred, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            r = pred()
            if r:
                return r
            if self.closed is not None:
                raise AssertionError("connection closed %r while waiting" % (self.closed,))
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out; got %s" % [m for _t, m in self.json][-12:])
            self._event.clear()
            try:
                await asyncio.wait_for(self._event.wait(), min(left, 0.2))
            except asyncio.TimeoutError:
                pass

    async def wait_json(self, type_, timeout=10, since=0.0, **fields):
        _t, m = await self.wait_for(lambda: self.find(type_, since, **fields), timeout)
        return m

    async def wait_closed(self, timeout=15):
        deadline = time.monotonic() + timeout
        while self.closed is None and time.monotonic() < deadline:
            self._event.clear()
            try:
                await asyncio.wait_for(self._event.wait(), 0.2)
            except asyncio.TimeoutError:
                pass
        return self.closed

    def texts(self, state="sentence_start", since=0.0):
        return [m["text"] for t, m in self.json if t >= since and m.get("type") == "tts" and m.get("state") == state]

    def audio_between(self, t0, t1=float("inf")):
        return [p for t, p in self.audio if t0 <= t <= t1]
