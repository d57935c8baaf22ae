"""Outside clients replayed from their recorded message shapes.

Each fixtures/<client>.json holds what one real client sends (read from
its source, version recorded in the file): how it connects (headers or
query parameters), its messages with `$SESSION` / `$TEXT` / `$PAYLOAD`
placeholders, its MCP answers and tool list, and the facts of its audio
(frame length, whether its mic is muted while the server speaks).

    async with OutsideClient(server.ws.url, "esp32_firmware") as dev:
        await dev.hello()
        await dev.send("listen_start_manual")
        await dev.speak(pcm16k)            # muted frames are counted, not sent
        await dev.send("listen_stop")

It is a WireDevice (the same recording of everything received), but every
message on the wire is the client's own shape.
"""
import asyncio
import copy
import json
import pathlib
import time
import urllib.parse

import websockets

from testkit.wire_device import WireDevice, opus_frames

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

_MISSING = object()

# apps config: no opener and no invitation, for tests about other things
QUIET = {"opener_lines": {"zh": [], "en": []}, "reinvite_lines": {"zh": [], "en": []}}


def load(name):
    with open(FIXTURES / (name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def fill(shape, **values):
    """A copy of a recorded message with "$NAME" strings replaced (whole values)."""
    if isinstance(shape, dict):
        return {k: fill(v, **values) for k, v in shape.items()}
    if isinstance(shape, list):
        return [fill(v, **values) for v in shape]
    if isinstance(shape, str) and shape.startswith("$") and shape[1:] in values:
        return copy.deepcopy(values[shape[1:]])
    return shape


def lookup(obj, dotted):
    for key in dotted.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


class OutsideClient(WireDevice):
    def __init__(self, url, client, mutes_mic=False, **kw):
        self.fx = load(client)
        self.client = client
        conn = self.fx["connect"]
        if conn["query"]:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(conn["query"])
        super().__init__(url, **kw)
        self.connect_headers = dict(conn["headers"])
        self.mutes_mic = mutes_mic     # the client's mic is off between tts start and stop
        self.mcp_requests = []         # every request the server sent to the client's tool server
        self.failures = []             # what the real client would have failed on
        self.sent_frames = 0
        self.muted_frames = 0

    async def connect(self):
        # Exactly the client's own headers (the browser page can send none).
        self.ws = await websockets.connect(self.url, additional_headers=self.connect_headers, max_size=2 ** 20)
        self._reader = asyncio.create_task(self._read())
        return self

    def message(self, name, **values):
        return fill(self.fx["messages"][name], SESSION=self.session_id or "", **values)

    async def send(self, name, **values):
        await self.send_json(self.message(name, **values))

    async def hello(self, name="hello", timeout=10):
        t0 = time.monotonic()
        await self.send(name)
        return await self.wait_json("hello", since=t0, timeout=timeout)

    @property
    def speaking(self):
        """The client's state: Speaking from tts start until tts stop."""
        for _t, m in reversed(self.json):
            if m.get("type") == "tts" and m.get("state") in ("start", "stop"):
                return m["state"] == "start"
        return False

    async def speak(self, pcm16k, frame_ms=60):
        """Live microphone audio at real-time pace, in the client's frame length.
        A client that mutes its mic while the server speaks drops those frames."""
        for packet in opus_frames(pcm16k, frame=16 * frame_ms):
            if self.mutes_mic and self.speaking:
                self.muted_frames += 1
            else:
                await self.send_audio(packet)
                self.sent_frames += 1
            await asyncio.sleep(frame_ms / 1000)

    async def send_packets(self, packets):
        """Buffered audio sent at once (stock firmware's wake-word packets)."""
        for p in packets:
            await self.send_audio(p)

    # ---- the client's tool server ----

    async def _serve_mcp(self, p):
        if "method" not in p:
            return
        self.mcp_requests.append(p)
        rid, method, params = p.get("id"), p["method"], p.get("params") or {}
        spec = self.fx["mcp"]
        if method == "initialize":
            missing = [path for path in spec["initialize_reads"] if lookup(params, path) is _MISSING]
            if missing:
                # The real client's handler raises here and answers nothing.
                self.failures.append("initialize without %s" % ", ".join(missing))
                return
            result = spec["initialize_result"]
        elif method == "tools/list":
            result = {"tools": spec["tools"]}
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            self.tool_calls.append((name, args))
            fn = self.tools.get(name)
            result = fill(spec["tools_call_result"], TEXT=json.dumps(fn(args) if fn else {"success": True}))
        else:
            return
        await self.send("mcp", PAYLOAD={"jsonrpc": "2.0", "id": rid, "result": result})

    def initialize_params(self):
        for p in self.mcp_requests:
            if p["method"] == "initialize":
                return p.get("params")
        return None
