# The board's half of a conversation: listening, the reply, barge-in. The
# device (app/device.py) owns the channel's life (open, retry, close) and
# hands this side its channel and the way to open it.
#
#   talk = Conversation(board, state, player, bus, listen_mode, open_channel)
#   talk.channel = channel     # the channel whose downstream audio is on_audio
#   await talk.on_wake(word)   # what the wake word and the button start
#   talk.on_message(msg)       # tts, stt, llm from the server
#
# It is also the entry room's `session` (app/entry: the boot task, the
# hand-off): connect(), listen(connect=False), stop_all(reason),
# tools_listed, call().
#
# Reactions (those of stock xiaozhi devices: docs/firmware.md, States):
# - wake word / button: stop the SD player (cancels passes and power-off);
#   open the channel if needed (hello within 10 s, else back to idle); if
#   the server was speaking or listening, `abort` (wake_word_detected)
#   first; then `listen detect` (wake word, with the level and score the
#   engine heard it at: the server lets the nearest device of a household
#   answer) and `listen start`.
# - `tts start`: pause the player, mic off, speaking; downstream Opus is
#   played only while speaking; `tts stop`: wait for the speaker to drain,
#   resume the player, then listening again (idle in manual mode).
# - any end of the channel: mic off, reply ended, player resumed, idle.
#
# One upstream frame buffer, made here at boot and reused by every frame of
# every turn: a listening turn makes only its task and one view of it.
import asyncio

import log
import proto

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_MAX_UP_FRAME = const(512)   # bytes of one upstream Opus frame (60 ms, VBR, complexity 0)
_HDR_MAX = const(16)         # the largest binary header (v2)

_log = log.get("device")   # the board's log lines keep the name they had before the move


class Conversation:
    def __init__(self, board, state, player, bus, listen_mode, open_channel):
        self.board = board
        self.state = state
        self.player = player
        self.bus = bus
        self.listen_mode = listen_mode
        self.busy = asyncio.Lock()     # one user action (connect, listen) at a time; the device's retry too
        self._open = open_channel      # the device's: True once the channel is open
        self.tools_listed = asyncio.Event()  # the server has read our last tools/list page (set by the device)
        self.channel = None            # set by the device right after it makes the channel
        self._up = bytearray(_HDR_MAX + _MAX_UP_FRAME)  # one upstream frame, reused
        self._up_mv = memoryview(self._up)
        self._uplink = None
        self._finish = None
        self.dropped_frames = 0        # downstream Opus that arrived while not speaking

    # ---- user actions ----

    async def on_wake(self, word):
        self.player.stop()
        async with self.busy:
            if self.state.is_(proto.STATE_SPEAKING, proto.STATE_LISTENING):
                await self._abort("wake_word_detected")
            elif not await self._open():
                return
            level, score = self._wake_measure(word)
            await self.channel.send(proto.listen(proto.LISTEN_DETECT, self.channel.session_id,
                                                 text=word, level=level, score=score))
            await self._start_listening()

    def _wake_measure(self, word):
        """(level dBFS, score) of the wake word the engine heard last, each
        None when it did not say (or the wake came from elsewhere)."""
        last = getattr(self.board.voice, "last", None)
        if not last or last[0] != "wake" or last[1] != word:
            return None, None
        score, level = last[2], last[3]
        if score is not None and not 0 <= score <= 1:
            score = None
        if level is not None:
            level = max(-200, min(0, level))
        return level, score

    async def on_button(self):
        _log.info("button in state %s", self.state.state)
        self.player.stop()
        async with self.busy:
            if self.state.is_(proto.STATE_SPEAKING):
                await self._abort(None)
                await self._start_listening()
            elif self.state.is_(proto.STATE_LISTENING):
                await self.stop_listening()
                await self.channel.send(proto.listen(proto.LISTEN_STOP, self.channel.session_id))
                self.state.go(proto.STATE_IDLE)
            elif await self._open():
                await self._start_listening()

    # ---- what the entry side asks for (app/entry: boot task, hand-off) ----

    async def connect(self):
        """Open the channel unless it is open; False when the server cannot be reached."""
        async with self.busy:
            return await self._open()

    async def listen(self, connect=False):
        """Listen unless a turn is under way (listening, speaking); with
        connect, open the channel first if needed (the boot's default chat)."""
        async with self.busy:
            if connect and not await self._open():
                return
            if self.channel.is_open() and not self.state.is_(proto.STATE_LISTENING, proto.STATE_SPEAKING):
                await self._start_listening()

    async def stop_all(self, reason):
        """The one generic stop: the player, a reply in flight (abort with
        reason), listening. True when a conversation was under way."""
        talking = self.channel.is_open() and self.state.is_(proto.STATE_SPEAKING, proto.STATE_LISTENING)
        self.player.stop()
        if self.channel.is_open() and self.state.is_(proto.STATE_SPEAKING):
            await self._abort(reason)
        await self.stop_listening()
        if self.state.is_(proto.STATE_SPEAKING, proto.STATE_LISTENING):
            self.state.go(proto.STATE_IDLE)
        return talking

    def call(self, method, params, timeout_ms):
        """A JSON-RPC request to the server over the channel (its answer, or
        None when the connection ended)."""
        return self.channel.call(method, params, timeout_ms)

    async def _abort(self, reason):
        self._cancel_finish()
        await self.channel.send(proto.abort(self.channel.session_id, reason))
        self.board.speaker.end_reply()

    # ---- listening (uplink) ----

    async def _start_listening(self):
        if not self.channel.is_open():
            return
        await self.channel.send(proto.listen(proto.LISTEN_START, self.channel.session_id,
                                             mode=self.listen_mode))
        if self.state.go(proto.STATE_LISTENING) and self._uplink is None:
            self._uplink = asyncio.create_task(self._uplink_loop())

    async def stop_listening(self):
        t, self._uplink = self._uplink, None
        if t is not None:
            t.cancel()
        self.board.mic.stop()

    async def _uplink_loop(self):
        mic = self.board.mic
        hs = proto.header_size(self.channel.version)
        payload = self._up_mv[hs:hs + _MAX_UP_FRAME]  # one view per listening turn, not per frame
        mic.start()
        try:
            while self.channel.is_open():
                n = await mic.read_frame(payload)
                if n and self.state.is_(proto.STATE_LISTENING, proto.STATE_SPEAKING) and \
                        (self.state.is_(proto.STATE_LISTENING) or self.listen_mode == proto.LISTEN_MODE_REALTIME):
                    await self.channel.send_audio(self._up, n)
        finally:
            mic.stop()

    # ---- from the server ----

    def on_message(self, msg):
        """The conversation's messages (tts, stt, llm); others are the device's."""
        t = msg["type"]
        if t == "tts":
            self._on_tts(msg)
        elif t == "stt":
            self.bus.emit("subtitle", role="user", text=msg["text"])
        elif t == "llm":
            self.bus.emit("emotion", emotion=msg["emotion"])

    def _on_tts(self, msg):
        st = msg["state"]
        if st == proto.TTS_START:
            self._cancel_finish()
            if self.state.is_(proto.STATE_SPEAKING) or self.state.go(proto.STATE_SPEAKING):
                self.player.pause_for_reply()
                if self.listen_mode != proto.LISTEN_MODE_REALTIME:
                    asyncio.create_task(self.stop_listening())
                self.board.speaker.begin_reply()
        elif st == proto.TTS_SENTENCE_START:
            self.bus.emit("subtitle", role="assistant", text=msg["text"])
        elif st == proto.TTS_STOP and self.state.is_(proto.STATE_SPEAKING):
            self._cancel_finish()
            self._finish = asyncio.create_task(self._finish_reply())

    async def _finish_reply(self):
        await self.board.speaker.drain()  # the end of the reply must be heard
        self._finish = None
        self.board.speaker.end_reply()
        self.player.resume_after_reply()
        if not self.state.is_(proto.STATE_SPEAKING):
            return
        if self.listen_mode == proto.LISTEN_MODE_MANUAL:
            self.state.go(proto.STATE_IDLE)
        else:
            await self._start_listening()

    def _cancel_finish(self):
        t, self._finish = self._finish, None
        if t is not None:
            t.cancel()

    async def on_audio(self, payload):
        if self.state.is_(proto.STATE_SPEAKING):
            await self.board.speaker.write_frame(payload)
        else:
            self.dropped_frames += 1

    def channel_closed(self):
        """Any end of the channel: the reply and listening end, the player
        resumes, the state goes back to idle."""
        self._cancel_finish()
        t, self._uplink = self._uplink, None
        if t is not None:
            t.cancel()
        self.board.speaker.end_reply()
        self.player.resume_after_reply()
        self.state.go_idle()
        self.tools_listed.clear()
