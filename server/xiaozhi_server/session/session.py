"""One device connection, from hello to goodbye: the wire.

The session owns the per-connection state (audio params, protocol version,
tool table, dialogue history) and routes each message to the part that
handles it: its floor (floor.py: who may speak, the reply being spoken),
its hearing (hearing.py: the child's words on to the App Runtime), the
device's MCP. Everything it holds goes away with the connection.

Rules it keeps for the device's sake:
- every message it sends is validated against the shared schema first;
- an invalid or unknown message is logged and ignored, never fatal; one
  that carried an id is answered with that id (session/refusal.py).
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine, Protocol, cast

from .. import protocol as proto
from ..config import SessionConfig
from ..mcp.device_client import DeviceMcp
from ..mcp.tools import ToolTable
from ..pipeline.chain import Chain
from ..pipeline.emotion import EMOTION_EMOJI
from ..pipeline.care import NoHistoryCare
from . import hello, refusal
from .floor import Floor
from .requests import DeviceRequests

if TYPE_CHECKING:
    from ..runtime.runtime import AppRuntime
    from ..services import Services
    from .hearing import Hearing


class DeviceSocket(Protocol):
    """The device's WebSocket as a session uses it (a websockets connection,
    behind transport.ratelimit.LimitedConnection)."""

    async def send(self, message: str | bytes) -> None: ...

    async def close(self, code: int = 1000, reason: str = "") -> None: ...

    def __aiter__(self) -> AsyncIterator[str | bytes]: ...

log = logging.getLogger(__name__)

CLEANUP_WAIT_S = 5.0    # how long a closed session waits for its cancelled tasks


class Session:
    def __init__(self, ws: DeviceSocket, services: Services, device_id: str, client_id: str | None,
                 protocol_version: int = 1, peer: str | None = None) -> None:
        self.ws = ws
        self.services = services
        self.cfg = SessionConfig.of(services.config)
        self.id = uuid.uuid4().hex[:16]
        self.device_id = device_id
        self.client_id = client_id
        self.version = protocol_version if protocol_version in (1, 2, 3) else 1
        self.peer = peer
        self.language = self.cfg.language
        self.lines = services.lines             # every line it speaks (text/lines.py)
        self.family = getattr(services, "family", None)    # limits and usage (runtime/port.py FamilyRules)
        self.hello: dict | None = None
        # called when the hello is taken, before it is answered: the server's
        # one-session-per-device rule (transport/device_sessions.py)
        self.on_hello: Callable[[], None] | None = None
        # what the device sends up
        self.upstream: dict[str, Any] = dict(cast(dict, proto.HELLO_DEFAULTS["audio_params"]))
        self.closed = False
        self.runtime: AppRuntime | None = None             # the App Runtime, from the hello on
        self.tools = ToolTable()
        self.mcp = DeviceMcp(self._send_rpc, timeout_s=self.cfg.tool_timeout_s,
                             vision=services.config.get("vision"))
        # the family's store (pipeline/care.py's CarePort; None without a control store)
        self.care = getattr(services, "care", None)
        self.keeps_history = True      # False: without_history()
        # the voice pipeline's stages (pipeline/chain.py); the safety filter holds the chat mode
        self.chain = Chain(services, device_id, lambda: self.runtime is None or self.runtime.mode == proto.MODE_CHAT,
                           self.language)
        self.speaker = self.chain.speaker(self.send_json, self._send_audio, self.id)
        self.dialogue = self.chain.dialogue(self.tools, self.language)
        self.floor = Floor(self, self.speaker, self.chain)
        self.hearing: Hearing | None = None     # from the hello on (it holds the listener)
        self.requests = DeviceRequests(self)    # the device's JSON-RPC requests to us
        self.turn_log: list[dict] = []          # per turn: latency figures (benchmarks read it)
        self._tasks: set[asyncio.Task] = set()
        self._t0 = time.monotonic()
        for tool in services.server_tools():
            self.tools.add(tool)

    @property
    def listener(self):
        """The listener (pipeline/listener.py), None before the hello."""
        return self.hearing.listener if self.hearing is not None else None

    def without_history(self) -> None:
        """A session whose Device-Id is only a claim (a shared token): the
        device's kept conversation and memory are not read, its turns are
        not written; the parents' topics and flags still apply."""
        self.keeps_history = False
        if self.care is not None:
            self.care = NoHistoryCare(self.care)

    # ---- sending ----

    async def send_json(self, msg: dict) -> bool:
        """Validate and send one message; False if the connection is gone."""
        key = msg.get("type", "") + ":" + proto.DOWN
        sid = proto.WS_SCHEMAS.get(key) or proto.WS_SCHEMAS.get(msg.get("type", "") + ":both")
        err = proto.validate(sid, msg) if sid else "no schema for %r" % msg.get("type")
        if err:
            # A bug on our side: never put a malformed message on the wire.
            log.error("not sending invalid %s message: %s", msg.get("type"), err)
            return False
        if msg["type"] == "tts" and msg["state"] == proto.TTS_STOP:
            self.floor.last_tts_stop = time.monotonic()
        try:
            await self.ws.send(proto.encode(msg))
            return True
        except Exception as e:
            self._gone(e)
            return False

    async def _send_audio(self, packet):
        if self.version == 1:
            data = packet    # the common case, per frame per session: nothing to add
        else:
            ts = int((time.monotonic() - self._t0) * 1000)
            data = proto.pack_frame(self.version, packet, proto.FRAME_OPUS, ts)
        try:
            await self.ws.send(data)
        except Exception as e:
            self._gone(e)
            raise asyncio.CancelledError()

    async def _send_rpc(self, payload):
        await self.send_json(proto.mcp(payload, session_id=self.id))

    def _gone(self, e):
        if not self.closed:
            log.info("[%s] connection lost: %s", self.device_id, e)
        self.closed = True

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """A background task of the session, never part of a reply (fresh context)."""
        t = asyncio.create_task(coro, context=contextvars.Context())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    # ---- lifecycle ----

    async def run(self) -> None:
        log.info("[%s] connected from %s (protocol v%d)", self.device_id, self.peer, self.version)
        try:
            msg = await hello.receive(self)
            if msg is None:
                return
            await hello.accept(self, msg)
            self.spawn(self.floor.watch_idle())
            async for message in self.ws:
                if isinstance(message, str):
                    await self._on_text(message)
                else:
                    self._on_binary(message)
        except Exception as e:
            if not self.closed:
                log.info("[%s] session ended: %s", self.device_id, e)
        finally:
            await self._cleanup()

    async def _cleanup(self):
        self.closed = True
        reply = self.floor.reply
        self.floor.close()
        self.mcp.close()
        tasks = [t for t in [reply.task if reply else None, *self._tasks] if t is not None and not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            # A task that does not end when cancelled (a provider stuck in a
            # close) must not keep the session counted, nor the server from
            # stopping: it is left behind, and said so.
            ended, stuck = await asyncio.wait(tasks, timeout=CLEANUP_WAIT_S)
            for t in ended:
                if not t.cancelled():
                    t.exception()       # read: a task that failed while closing is not news
            if stuck:
                log.warning("[%s] %d task(s) of session %s did not end within %.0f s of its close: left behind",
                            self.device_id, len(stuck), self.id, CLEANUP_WAIT_S)
        if self.listener is not None:
            await self.listener.close()
        if self.runtime is not None:
            self.runtime.close()
        await self.services.on_session_closed(self)
        log.info("[%s] session %s closed", self.device_id, self.id)

    async def close(self, reason: str = "goodbye") -> None:
        await self.send_json(proto.goodbye(session_id=self.id, reason=reason))
        self.closed = True
        await self.ws.close(1000, reason)

    # ---- receiving ----

    def _on_binary(self, data):
        try:
            ftype, _ts, payload = proto.unpack_frame(self.version, data)
        except proto.ProtoError as e:
            log.info("[%s] bad audio frame ignored: %s", self.device_id, e)
            return
        if ftype == proto.FRAME_OPUS and self.listener is not None and self.upstream["format"] == "opus":
            self.listener.push(payload)

    async def _on_text(self, text):
        try:
            msg = proto.decode_ws(text, proto.UP)
        except proto.ProtoError as e:
            if e.unknown:
                log.info("[%s] ignored: %s", self.device_id, e)
            else:
                log.warning("[%s] invalid message ignored: %s", self.device_id, e)
            await refusal.refuse(self, text, str(e))
            return
        handler = getattr(self, "_on_" + msg["type"], None)
        if handler is None:
            return
        try:
            await handler(msg)
        except Exception as e:
            log.exception("[%s] handling %s failed", self.device_id, msg["type"])
            await refusal.refuse(self, text, "server error: %s" % e, proto.RPC_INTERNAL_ERROR)

    async def _on_listen(self, msg):
        self.floor.last_activity = time.monotonic()
        state = msg["state"]
        if state == proto.LISTEN_START:
            self.hearing.listen_start(msg.get("mode", "auto"))
        elif state == proto.LISTEN_STOP:
            await self.hearing.listen_stop()
        elif state == proto.LISTEN_DETECT:
            await self.hearing.detect(msg["text"].strip(), msg.get("level"), msg.get("score"))

    async def _on_abort(self, msg):
        await self.floor.abort(msg.get("reason") or "device")

    async def _on_mcp(self, msg):
        payload = msg["payload"]
        if "method" in payload:
            await self.requests.on_request(payload)
        else:
            self.mcp.on_payload(payload)    # an answer to one of our tool calls

    async def _on_goodbye(self, msg):
        self.closed = True
        await self.ws.close(1000, "device said goodbye")

    async def _on_hello(self, msg):
        """A second hello after the handshake."""
        log.info("[%s] repeated hello ignored", self.device_id)

    # ---- what the runtime asks of the wire ----

    async def show_emotion(self, emotion: str) -> None:
        await self.send_json(proto.llm(emotion, session_id=self.id, text=EMOTION_EMOJI.get(emotion, "🙂")))
