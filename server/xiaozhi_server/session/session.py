"""One device connection, from hello to goodbye.

The session owns the per-connection state (audio params, protocol version,
tool table, dialogue history, the reply being spoken) and routes each
message to the part that handles it. Everything it holds goes away with
the connection.

Rules it keeps for the device's sake:
- every message it sends is validated against the shared schema first;
- an invalid or unknown message is logged and ignored, never fatal; one
  that carried an id is answered with that id (session/refusal.py);
- every reply belongs to an epoch; `abort` starts a new epoch, and output
  of an older epoch (a late ASR result, LLM text, TTS audio) is dropped;
- speech while the server speaks barges in (realtime mode, or during the
  short greeting after a wake word, so no word after the wake word is lost);
- the server never speaks on its own over the child's turn: a greeting or
  an opener waits while push to talk is held and right after a wake word
  (stock firmware mutes its mic while the server speaks), see child_done();
- of a household's devices that hear one wake word, only one answers
  (services.wake_floor): until that is decided nothing of the wake is
  answered, and a device that lost gets `goodbye` and its channel closes,
  which sends stock firmware (and ours) back to idle without a word.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Coroutine, Protocol, cast

from .. import protocol as proto
from ..mcp.device_client import DeviceMcp
from ..mcp.tools import ToolTable
from ..pipeline.chain import Chain
from ..pipeline.emotion import EMOTION_EMOJI
from ..pipeline.care import empty_profile, write_later
from ..pipeline.listener import Listener, committed
from ..pipeline.safety import Instead
from ..runtime.runtime import AppRuntime, TaskError
from ..runtime.tools import runtime_tools
from ..text.lang import has_han
from ..text.phrases import plain
from . import refusal

if TYPE_CHECKING:
    from ..pipeline.listener import Utterance
    from ..services import Services


class DeviceSocket(Protocol):
    """The device's WebSocket as a session uses it (a websockets connection,
    behind transport.ratelimit.LimitedConnection)."""

    async def send(self, message: str | bytes) -> None: ...

    async def close(self, code: int = 1000, reason: str = "") -> None: ...

    def __aiter__(self) -> AsyncIterator[str | bytes]: ...

log = logging.getLogger(__name__)

# The goodbye's reason for a device whose household's wake word another
# device answers (our firmware then stays idle: app/device.py).
ANSWERED_ELSEWHERE = "another_device_answered"
CLEANUP_WAIT_S = 5.0    # how long a closed session waits for its cancelled tasks

# The reply task whose work is running; tasks it spawns (the speaker's
# synthesis, tool calls inside it) inherit it.
_CURRENT_REPLY = contextvars.ContextVar("current_reply", default=None)

def _lang(text, default):
    if has_han(text):
        return "zh"
    return "en" if any(c.isalpha() for c in text) else default


class NoHistoryCare:
    """The family's care records as a session without history sees them:
    topics and flags as they are, no memory, no transcript written."""

    def __init__(self, care):
        self._care = care

    def __getattr__(self, name):
        return getattr(self._care, name)     # topics, add_flag, privacy

    async def memory(self, device_id):
        return {"enabled": False, "profile": empty_profile()}

    async def set_memory(self, device_id, profile):
        return False

    async def add_turn(self, device_id, app, child, reply):
        return False


class Session:
    def __init__(self, ws: DeviceSocket, services: Services, device_id: str, client_id: str | None,
                 protocol_version: int = 1, peer: str | None = None) -> None:
        self.ws = ws
        self.services = services
        self.cfg = services.config["session"]
        self.id = uuid.uuid4().hex[:16]
        self.device_id = device_id
        self.client_id = client_id
        self.version = protocol_version if protocol_version in (1, 2, 3) else 1
        self.peer = peer
        self.language = self.cfg.get("language", "zh")
        self.lines = services.lines             # every line it speaks (text/lines.py)
        self.family = getattr(services, "family", None)    # limits and usage (runtime/port.py FamilyRules)
        self.hello: dict | None = None
        # what the device sends up
        self.upstream: dict[str, Any] = dict(cast(dict, proto.HELLO_DEFAULTS["audio_params"]))
        self.epoch = 0
        self._epoch_t = 0.0         # when the current epoch began (the last abort)
        self.reply_task: asyncio.Task | None = None
        self.reply_utterance: Utterance | None = None     # the utterance the current reply answers
        self.greeting = False
        self._ptt_free = asyncio.Event()    # cleared while push to talk is held
        self._ptt_free.set()
        self._after_wake: asyncio.Task | None = None   # True = the child stayed quiet after the wake word
        self._floor: asyncio.Task | None = None   # True = this device answers its last wake word (household)
        self._last_audio_at = 0.0
        self.closed = False
        self.last_activity = time.monotonic()
        self.last_user_speech = 0.0     # when the user last spoke (VAD start or words)
        self.last_tts_stop = 0.0        # when we last sent tts stop
        self.runtime: AppRuntime | None = None             # the App Runtime, from the hello on
        self.tools = ToolTable()
        self.mcp = DeviceMcp(self._send_rpc, timeout_s=self.cfg.get("tool_timeout_s", 10),
                             vision=services.config.get("vision"))
        # the family's store (pipeline/care.py's CarePort; None without a control store)
        self.care = getattr(services, "care", None)
        self.keeps_history = True      # False: without_history()
        # the voice pipeline's stages (pipeline/chain.py); the safety filter holds the chat mode
        self.chain = Chain(services, device_id, lambda: self.runtime is None or self.runtime.mode == proto.MODE_CHAT,
                           self.language)
        self.speaker = self.chain.speaker(self.send_json, self._send_audio, self.id)
        self.dialogue = self.chain.dialogue(self.tools, self.language)
        self.listener: Listener | None = None
        # method -> async fn(params) -> result (device requests)
        self.rpc_handlers: dict[str, Callable[[dict], Awaitable[Any]]] = {}
        self.turn_log: list[dict] = []          # per turn: latency figures (benchmarks read it)
        self._tasks: set[asyncio.Task] = set()
        self._t0 = time.monotonic()
        for tool in services.server_tools():
            self.tools.add(tool)

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
            self.last_tts_stop = time.monotonic()
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
            if not await self._handshake():
                return
            self.spawn(self._watch_idle())
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

    async def _handshake(self):
        deadline = time.monotonic() + self.cfg.get("hello_timeout_s", 10)
        while True:
            left = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(self.ws.recv(), max(left, 0.001))
            except asyncio.TimeoutError:
                log.info("[%s] no hello within %s s: closing", self.device_id, self.cfg.get("hello_timeout_s", 10))
                await self.ws.close(4000, "no hello")
                return False
            if not isinstance(message, str):
                log.info("[%s] binary frame before hello ignored", self.device_id)
                continue
            try:
                msg = proto.decode_ws(message, proto.UP)
            except proto.ProtoError as e:
                log.info("[%s] before hello, ignored: %s", self.device_id, e)
                await self._refuse(message, str(e))
                continue
            if msg["type"] != "hello":
                log.info("[%s] %s before hello ignored", self.device_id, msg["type"])
                await self._refuse(message, "%s before hello: send hello first" % msg["type"])
                continue
            return await self._accept_hello(msg)

    async def _accept_hello(self, msg):
        self.hello = msg
        # Whatever the hello leaves out takes the documented defaults (stock
        # servers accept a bare hello; the browser test page sends one).
        # Opus of any rate, channel count or frame length decodes into the
        # listener's 16 kHz; what we send down is announced as it really is.
        self.upstream = dict(proto.HELLO_DEFAULTS["audio_params"], **(msg.get("audio_params") or {}))
        self.listener = self.chain.listener(self._on_speech_start, self._on_utterance)
        self.spawn(self.chain.hear_child(self.listener, self.device_id, self.care, self.family))
        ap = {"format": "opus", "sample_rate": self.speaker.rate, "channels": 1,
              "frame_duration": proto.FRAME_DURATION_MS}
        await self.send_json(proto.hello_server(self.id, ap, version=self.version))
        if self.upstream["format"] != "opus":
            log.warning("[%s] upstream audio %r is not Opus: not decoded", self.device_id, self.upstream["format"])
            await self.send_json(proto.alert("warning", self.lines.get("unheard_audio", self.language)
                                             % self.upstream["format"], "confused", session_id=self.id))
        if (msg.get("features") or {}).get("mcp"):
            self.spawn(self._start_device_mcp())
        self._start_runtime()
        # Before the device's first words are read: they may follow on from
        # what it said on another node (runtime/conversation.py).
        await self.runtime.carry.restore()
        await self.services.on_session_ready(self)
        return True

    def _start_runtime(self) -> None:
        """The session's App Runtime: the default app at once, its own tools,
        the device's app/start_task, and the opener once the device is ready."""
        runtime = self.runtime = AppRuntime(self, self.services.registry, self.services.config,
                                            llm_configured=self.services.llm_configured,
                                            conversations=self.services.conversations if self.keeps_history
                                            else None)
        runtime.adopt_default()
        for tool in runtime_tools(self, runtime):
            self.tools.add(tool)

        async def app_start_task(params):
            try:
                return await runtime.start_app_task(params["app_id"], params["task_id"],
                                                    params.get("params"), params["source"])
            except TaskError as e:
                err = proto.ProtoError(str(e))
                err.code = e.code
                raise err
        self.rpc_handlers[proto.METHOD_APP_START_TASK] = app_start_task
        self.spawn(runtime.open_default())

    async def _start_device_mcp(self):
        try:
            await self.mcp.start()
        except Exception as e:
            log.warning("[%s] device MCP unavailable: %s", self.device_id, e)
            return
        self.tools.replace_origin("device", self.mcp.as_tools())

    async def _cleanup(self):
        self.closed = True
        self._ptt_free.set()
        self.epoch += 1
        self.speaker.cancel()
        self.mcp.close()
        tasks = [t for t in [self.reply_task, *self._tasks] if t is not None and not t.done()]
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
            self._last_audio_at = time.monotonic()
            self.listener.push(payload)

    async def _on_text(self, text):
        try:
            msg = proto.decode_ws(text, proto.UP)
        except proto.ProtoError as e:
            if e.unknown:
                log.info("[%s] ignored: %s", self.device_id, e)
            else:
                log.warning("[%s] invalid message ignored: %s", self.device_id, e)
            await self._refuse(text, str(e))
            return
        handler = getattr(self, "_on_" + msg["type"], None)
        if handler is None:
            return
        try:
            await handler(msg)
        except Exception as e:
            log.exception("[%s] handling %s failed", self.device_id, msg["type"])
            await self._refuse(text, "server error: %s" % e, proto.RPC_INTERNAL_ERROR)

    async def _refuse(self, text: str, reason: str, rpc_code: int = proto.RPC_INVALID_REQUEST) -> None:
        """Answer a refused message that carried an id; a refused answer to
        one of our MCP calls fails that call now."""
        refused = refusal.carried_id(text)
        if refused is None:
            return
        if refused.kind == "mcp_answer":
            if refused.id is not None:
                self.mcp.on_payload({"id": refused.id, "error": {"message": "malformed answer: " + reason}})
            return
        reply = refusal.answer(refused, reason, self.id, rpc_code)
        if reply is not None:
            await self.send_json(reply)

    async def _on_listen(self, msg):
        self.last_activity = time.monotonic()
        state = msg["state"]
        if state == proto.LISTEN_START:
            self.listener.start(msg.get("mode", "auto"))
            if self.listener.mode == proto.LISTEN_MODE_MANUAL:
                self._ptt_free.clear()   # the device records until listen stop
            else:
                self._ptt_free.set()
            # Off the receive loop (here and below): the runtime may wait for
            # the device's answers, which this loop has to read.
            if self.runtime is not None:
                self.spawn(self._on_floor(self.runtime.on_listen_start))
        elif state == proto.LISTEN_STOP:
            await self.listener.stop()
            self._ptt_free.set()
        elif state == proto.LISTEN_DETECT:
            text = msg["text"].strip()
            if self._is_wake_word(text):
                self.last_user_speech = woke = time.monotonic()
                self.listener.drop_pending()
                if self._after_wake is not None:
                    self._after_wake.cancel()
                self._after_wake = self.spawn(self._quiet_after_wake(woke))
                if self.services.wake_floor is not None:
                    self._floor = self.spawn(self._claim_floor(msg.get("level"), msg.get("score")))
                if self.runtime is not None:
                    self.spawn(self._on_floor(self.runtime.on_wake, text))
            else:
                await self._on_user_text(text)

    async def _on_abort(self, msg):
        await self.abort(msg.get("reason") or "device")

    async def _on_mcp(self, msg):
        payload = msg["payload"]
        if "method" not in payload:
            self.mcp.on_payload(payload)
            return
        try:
            proto.check_rpc(payload)
        except proto.ProtoError as e:
            if "id" in payload:
                await self._send_rpc(proto.rpc_error(payload.get("id"), proto.RPC_INVALID_PARAMS, str(e)))
            return
        handler = self.rpc_handlers.get(payload["method"])
        if handler is None:
            if "id" in payload:
                await self._send_rpc(proto.rpc_error(payload["id"], proto.RPC_METHOD_NOT_FOUND,
                                                     "method %s is not served here" % payload["method"]))
            return
        # Off the receive loop: the handler may itself wait for device answers.
        self.spawn(self._serve_rpc(handler, payload))

    async def _serve_rpc(self, handler, payload):
        try:
            reply = proto.rpc_result(payload.get("id"), await handler(payload.get("params") or {}))
        except proto.ProtoError as e:
            reply = proto.rpc_error(payload.get("id"), getattr(e, "code", proto.RPC_INVALID_PARAMS), str(e))
        except Exception as e:
            log.exception("[%s] %s failed", self.device_id, payload["method"])
            reply = proto.rpc_error(payload.get("id"), proto.RPC_INTERNAL_ERROR, "server error: %s" % e)
        if "id" in payload:
            await self._send_rpc(reply)

    async def _on_goodbye(self, msg):
        self.closed = True
        await self.ws.close(1000, "device said goodbye")

    async def _on_hello(self, msg):
        """A second hello after the handshake."""
        log.info("[%s] repeated hello ignored", self.device_id)

    # ---- turns ----

    def _is_wake_word(self, text):
        t = plain(text)
        return bool(t) and t in [plain(w) for w in self.cfg.get("wake_words", ())]

    async def abort(self, reason: str) -> None:
        """Stop speaking now; nothing of what was in flight may follow."""
        self.epoch += 1
        self._epoch_t = time.monotonic()
        was_speaking = self.speaker.speaking or (self.reply_task is not None and not self.reply_task.done())
        self._cancel_reply()
        log.info("[%s] abort (%s)", self.device_id, reason)
        if was_speaking:
            await self.send_json(proto.tts(proto.TTS_STOP, session_id=self.id))

    def _cancel_reply(self):
        self.speaker.cancel()
        if self.reply_task is not None and not self.reply_task.done():
            self.reply_task.cancel()
        self.reply_task = None

    def in_reply(self) -> bool:
        """True when called from inside the reply being spoken (a tool call)."""
        return self.reply_task is not None and _CURRENT_REPLY.get() is self.reply_task

    async def say(self, text: str) -> bool:
        """Speak one line as a reply of its own; True if it was heard to the end."""
        t = self.start_reply(self.speaker.say, text)
        try:
            await asyncio.wait({t})
        except asyncio.CancelledError:
            raise
        return t.done() and not t.cancelled() and t.exception() is None

    def start_reply(self, coro_fn: Callable[..., Awaitable[Any]], *args: Any,
                    answers: Utterance | None = None) -> asyncio.Task:
        """Run one reply (cancelling any current one) in the current epoch.
        answers: the utterance it answers; dropped unheard if the child goes on."""
        self._cancel_reply()
        self.reply_utterance = answers
        epoch = self.epoch

        async def guarded():
            _CURRENT_REPLY.set(asyncio.current_task())
            try:
                await coro_fn(*args)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("[%s] reply failed", self.device_id)
                if self.epoch == epoch and self.speaker.speaking is False:
                    await self.send_json(proto.tts(proto.TTS_STOP, session_id=self.id))
        self.reply_task = asyncio.create_task(guarded())
        return self.reply_task

    async def speak(self, sentences: AsyncIterator[str], gate: asyncio.Future | None = None,
                    said: list[str] | None = None) -> bool:
        """Speak a reply's sentences as they come (False if cut off); said gets
        each sentence as it goes to TTS (after the chain's stages)."""
        return await self.speaker.speak(self.chain.spoken(sentences, gate, said), gate=gate)

    def first_audio_at(self) -> float | None:
        """When the last reply's first frame left (monotonic), None before it."""
        return self.speaker.first_frame_at

    async def show_emotion(self, emotion: str) -> None:
        await self.send_json(proto.llm(emotion, session_id=self.id, text=EMOTION_EMOJI.get(emotion, "🙂")))

    async def greet(self, text: str) -> None:
        """A wake word: a short greeting, but only if the child says nothing
        more. Stock firmware (and py-xiaozhi, and ours) mute the mic while the
        server speaks, so a greeting at once would swallow the words that
        follow the wake word; they are answered instead."""
        self.last_activity = time.monotonic()
        if self.speaker.speaking:
            await self.abort("wake_word_detected")
        wait = self._after_wake
        if wait is not None:
            await asyncio.wait({wait})
            if wait.cancelled() or not wait.result():
                return  # the child went on talking (or a newer wake word took over)
        self.greeting = True
        line = self.lines.get("greeting", _lang(text, self.language))

        async def greet():
            try:
                await self.speaker.say(line)
            finally:
                self.greeting = False
        self.start_reply(greet)

    async def _quiet_after_wake(self, woke):
        """True once the child has stayed quiet for `wake_quiet_ms` of the audio
        heard after the wake word; False as soon as they speak or type. A client
        that sends no audio (the browser page) counts as quiet after 1.5 times
        as long on the clock. Heard audio, not the clock, decides while audio
        flows, so a VAD running late on a busy machine never greets over words."""
        quiet_ms = int(self.cfg.get("wake_quiet_ms", 1000))
        lis = self.listener
        heard0 = lis.heard_ms
        while not self.closed:
            if self.last_user_speech > woke:
                return False
            detector = lis.detector
            if lis.heard_ms - heard0 >= quiet_ms and not (detector is not None and detector.onset):
                return True
            silent_since = max(woke, self._last_audio_at)
            if time.monotonic() - silent_since >= 1.5 * quiet_ms / 1000 and lis.caught_up:
                return True
            lis.progress.clear()
            try:
                await asyncio.wait_for(lis.progress.wait(), 0.1)
            except asyncio.TimeoutError:
                pass
        return False

    async def child_done(self) -> None:
        """Until the child's turn is over: push to talk released, and the moment
        after a wake word settled (the child stayed quiet, or spoke and is being
        answered). What the server says on its own (opener, invitation) waits
        here, then checks whether the child spoke meanwhile."""
        while not self.closed:
            if not self._ptt_free.is_set():
                await self._ptt_free.wait()
            elif self._after_wake is not None and not self._after_wake.done():
                await asyncio.wait({self._after_wake})
            else:
                return

    async def _on_speech_start(self):
        self.last_activity = self.last_user_speech = time.monotonic()
        mode = self.listener.mode if self.listener else "auto"
        if self.speaker.speaking and (self.greeting or mode == "realtime"):
            await self.abort("barge_in")

    async def _on_utterance(self, utt):
        if self.closed:
            return
        if utt.ended_at < self._epoch_started():
            log.info("[%s] dropped %r: an abort came after it", self.device_id, utt.text)
            return
        if utt.failed:
            # ASR gave no words (logged where it failed): say so rather than
            # leave the child waiting in silence.
            self.last_activity = self.last_user_speech = time.monotonic()
            self.start_reply(self.speaker.say, self.lines.get("asr_failed", self.language))
            return
        await self._on_user_text(utt.text, utterance=utt)

    def _epoch_started(self):
        return self._epoch_t

    async def _on_user_text(self, text, utterance=None):
        self.last_activity = self.last_user_speech = time.monotonic()
        if self.chain.words:
            heard = await self.chain.heard(text)
            if heard is None:
                log.info("[%s] %r dropped by the pipeline's word stages", self.device_id, text)
                return
            if isinstance(heard, Instead):
                self.spawn(self._say_instead(heard, text, utterance))
                return
            text = heard
        self.spawn(self._on_floor(self._send_stt, text, utterance))
        if utterance is not None and utterance.commit is not None:
            # A speculative end of turn: if the child goes on, the reply
            # prepared for these words is dropped before anything is heard.
            utterance.commit.add_done_callback(lambda f, u=utterance: self._on_commit(u, f))
        if self.runtime is not None:
            self.spawn(self._on_floor(self.runtime.route, text, utterance))

    async def _claim_floor(self, level, score):
        """Ask whether this device answers its household's wake word; if
        another does, say goodbye (stock firmware goes idle when its channel
        closes, as ours does) and end the session."""
        if await self.services.wake_floor.claim(self.device_id, level, score):
            return True
        log.info("[%s] another device of the household answers the wake word: back to idle", self.device_id)
        self._cancel_reply()
        await self.close(ANSWERED_ELSEWHERE)
        return False

    async def _on_floor(self, fn, *args):
        """Run fn(*args) once the wake word's arbitration (if any) let this device answer."""
        floor = self._floor
        if floor is not None:
            await asyncio.wait({floor})
            if floor.cancelled() or floor.exception() is not None or not floor.result():
                return
        await fn(*args)

    async def _say_instead(self, instead, text, utterance):
        """A word stage answered in place of the child's words (the safety
        filter's redirect): once the words are final, the line is the reply;
        the words are not shown (no stt) and go to no model."""
        if not await committed(utterance) or self.closed:
            return
        self.chain.confirm_when_final(instead, None)
        if self.runtime is not None:
            self.runtime.proactive.user_spoke()
        self.start_reply(self.speaker.say, instead.line)
        if self.care is not None and self.runtime is not None and self.runtime.task is not None:
            write_later("turn", self.device_id,
                        self.care.add_turn(self.device_id, self.runtime.task.app_id, text, instead.line))

    async def _send_stt(self, text, utterance):
        if await committed(utterance):
            if utterance is not None and utterance.early:
                text = utterance.text   # the final text the early reply's words agreed with
            await self.send_json(proto.stt(text, session_id=self.id))

    def _on_commit(self, utterance, fut):
        if fut.cancelled() or fut.result():
            return
        if self.reply_utterance is utterance and self.reply_task is not None and not self.reply_task.done():
            self.reply_task.cancel()
            self.speaker.cancel()

    def farewell(self, text: str) -> None:
        """The user said goodbye: answer, then end the session."""
        self.start_reply(self._farewell, self.lines.get("farewell", _lang(text, self.language)))

    async def wait_quiet(self) -> None:
        """Until the current reply (if any, and not the caller itself) is over."""
        t = self.reply_task
        if t is not None and not t.done() and not self.in_reply():
            await asyncio.wait({t})

    async def _farewell(self, line):
        await self.speaker.say(line)
        await self.close("exit phrase")

    async def _watch_idle(self):
        limit = self.cfg.get("idle_timeout_s", 120)
        while not self.closed:
            await asyncio.sleep(min(1.0, limit / 4))
            busy = self.speaker.speaking or (self.reply_task is not None and not self.reply_task.done())
            if busy:
                self.last_activity = time.monotonic()
            elif time.monotonic() - self.last_activity > limit:
                log.info("[%s] %s s without speech: goodbye", self.device_id, limit)
                await self.speaker.say(self.lines.get("idle_bye", self.language))
                await self.close("idle")
                return
