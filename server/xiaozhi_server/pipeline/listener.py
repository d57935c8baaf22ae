"""Hearing the user: Opus frames -> PCM -> VAD end of turn -> the ASR stage.

Frames are queued as they arrive and worked off by one task, a batch at
a time (one judgement of the stream at a time), so the receive loop
never waits on the VAD or ASR. There is no deaf window: frames are heard
from the first one after `listen start` or a wake word, and speech that
starts while the server speaks is reported (`on_speech_start`) so the
session can barge in. Auto and realtime end a turn on silence; manual
ends it on `listen stop` (push to talk).

The end of a turn is speculative: after `silence_ms` of silence the words
go to ASR and are handed on with an uncommitted `commit` future, so the
reply can be prepared; once the silence has lasted as long as the words
ask (turn_words.py) the future becomes True and the reply may be heard.
If the child speaks first it becomes False, the prepared reply is dropped
unheard, and the new words join the old ones (docs/server.md, One turn).

With a streaming ASR (transcriber.streaming) a stream is opened at the
VAD's turn start (push to talk: at listen start) and fed the utterance
(pre-roll included) batch by batch while the child speaks; the speculative end finishes it, so the final
text is ready the recognizer's last pass after the end, not a whole
decode after it. Its partial text is the words rule's first guess at the
speculative end (the final text, when it comes, decides). A joined
utterance is a new stream given the earlier words' audio first; a stream
no longer wanted (the child went on before its words came, a wake word,
the session's end) is cancelled, which closes its connection. A batch ASR
(Whisper) is given the whole utterance at the speculative end, as before.
With a streaming ASR the reply may start before the final text, on the
streaming words once they stop changing after the end (early_reply.py):
it is heard only if the final text says the same words and the turn
commits; otherwise it is dropped unheard and the final text answered.
ASR that fails gives a Turn with `failed` set: the session answers
it with its could-not-hear line once the turn is committed.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from ..config import VadConfig
from .asr import AsrFailed
from .early_reply import EarlyReply
from .opus import OpusDecoder
from .reply import Turn
from .turn import EndOfTurnDetector
from .turn_words import CommitSilence, same_words
from ..pools import run_blocking

if TYPE_CHECKING:
    from ..providers.asr.base import AsrStream
    from ..providers.base import VadProvider
    from .asr import Transcriber

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 200   # 12 s of audio; beyond that the device is flooding us
MAX_MANUAL_BYTES = 30 * 32000   # push to talk keeps at most 30 s
ONSET_PATIENCE_S = 1.0           # the clock's commit waits this long for a voice starting again


class _Tentative:
    """An utterance whose end is decided but not yet committed."""

    __slots__ = ("audio", "commit", "at_ms", "heard_ms", "timer", "wait_ms", "since", "asr", "stream",
                 "final", "early", "ended_at")

    def __init__(self, audio, commit, at_ms, wait_ms, since, stream=None):
        self.audio = audio
        self.commit = commit
        self.at_ms = at_ms      # stream position of the speculative end
        self.heard_ms = 0       # ms of audio heard since the end (all quiet so far)
        self.timer = None
        self.wait_ms = wait_ms  # more silence needed before the commit; None until there are words
        self.since = since      # loop time of the speculative end
        self.asr = None         # the task transcribing it
        self.stream = stream    # its ASR stream (streaming ASR), finishing
        self.final = False      # ASR has given its final words (or failed)
        self.early = None       # EarlyReply: a reply on the streaming words (streaming ASR)
        self.ended_at = time.monotonic()


class Listener:
    def __init__(self, vad_provider: VadProvider, asr: Transcriber, on_speech_start: Callable[[], Awaitable[None]],
                 on_utterance: Callable[[Turn], Awaitable[None]], vad_config: VadConfig | None = None) -> None:
        self.asr = asr
        self._on_start = on_speech_start
        self._on_utterance = on_utterance
        self._vad_provider = vad_provider
        self._vad_cfg = vad_config or VadConfig()
        self.detector: EndOfTurnDetector | None = None   # built on first audio (a few KB of VAD state)
        self.decoder = OpusDecoder()
        self.mode = "auto"
        self.active = False
        self._frames: collections.deque[bytes] = collections.deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._asr_tasks: set[asyncio.Task] = set()
        self._stream: AsrStream | None = None   # streaming ASR: the utterance being heard
        self._pushed = 0                # bytes of the detector's utterance pushed into it
        self._streams: set[AsrStream] = set()   # every stream not yet finished or cancelled
        self._closing: set[asyncio.Task] = set()   # streams being cancelled
        self._manual = bytearray()     # push to talk: everything since listen start
        self._manual_speech = False
        self._tentative: _Tentative | None = None
        self._prefix = b""             # words of a resumed utterance, joined to the next
        self.silence_ms = self._vad_cfg.silence_ms
        self.commit = CommitSilence.from_config(self._vad_cfg, floor_ms=self.silence_ms)
        self.resumed = 0
        self.dropped = 0
        # Replies started on a streaming ASR's words before the final text
        # (vad.early_reply), and those of them dropped unheard.
        self.early_reply = self._vad_cfg.early_reply
        self.early_started = 0
        self.early_wasted = 0
        self.heard_ms = 0               # audio the VAD has judged so far (ms)
        self.last_frame_at = 0.0        # monotonic time the device last sent a frame
        self.progress = asyncio.Event()  # set after each batch the VAD has judged
        self._generation = 0            # bumped by drop_pending: older batches say nothing
        self._reset_detector = False
        self._judging = False
        # One judgement of the stream at a time: listen stop drains the queue
        # while the listening task may have a batch in the VAD thread.
        self._batch_lock = asyncio.Lock()

    def start(self, mode: str = "auto") -> None:
        self.mode = mode or "auto"
        self.active = True
        self._manual = bytearray()
        self._manual_speech = False
        if self.mode == "manual" and self.asr.streaming:
            # Push to talk: the press is the utterance, streamed from its first frame.
            self._drop_stream()
            self._new_stream()
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """listen stop: in manual mode the turn ends now with what was said."""
        self.active = False
        async with self._batch_lock:    # after the batch the VAD is judging now, if any
            while self._frames:
                await self._judge_batch()
            if self._tentative is not None:
                self._commit(self._tentative)   # the device says the child has finished
            if self.mode == "manual":
                stream, self._stream = self._stream, None
                if self.detector is not None:
                    self.detector.reset()
                if self._manual_speech and stream is not None:
                    await stream.push(bytes(self._manual[self._pushed:]))
                    self._finish_audio(bytes(self._manual), stream=stream)
                elif self._manual_speech:
                    self._finish_audio(bytes(self._manual))
                else:
                    self._discard(stream)   # nothing was said
                self._manual = bytearray()
                self._manual_speech = False

    @property
    def caught_up(self) -> bool:
        """No audio received is still waiting for the VAD's verdict."""
        return not self._frames and not self._judging

    def drop_pending(self) -> None:
        """The device detected its wake word: the audio it sent before saying so
        is the wake word itself (stock firmware sends it first), not words to
        answer. Frames not yet judged are dropped, a batch in the VAD reports
        nothing, and the VAD starts afresh."""
        self._frames.clear()
        self._generation += 1
        self._reset_detector = True
        self._manual = bytearray()
        self._manual_speech = False
        # A turn the VAD already ended in that audio is the wake word too:
        # its reply is dropped unheard and nothing of it joins the next words.
        self._withdraw()
        self._prefix = b""
        self._drop_stream()

    def push(self, packet: bytes | memoryview) -> None:
        """One upstream Opus packet (bytes or memoryview)."""
        # Counted even when not listening: the quiet after a wake word is
        # judged on the clock only once the device stops sending (session/floor.py).
        self.last_frame_at = time.monotonic()
        if not self.active:
            return
        if len(self._frames) >= MAX_QUEUED_FRAMES:
            self.dropped += 1
            return
        self._frames.append(bytes(packet))
        self._wake.set()

    async def _ensure_detector(self):
        if self.detector is None:
            stream = await run_blocking(self._vad_provider.open)
            cfg = self._vad_cfg
            self.detector = EndOfTurnDetector(stream, threshold=cfg.threshold,
                                              silence_ms=self.silence_ms)
        return self.detector

    def _decode(self, packets, detector, keep_manual):
        """Blocking (in the VAD thread, just before it judges the windows with
        every other session's): decode a batch and cut it into VAD windows, so
        the event loop makes no codec call per frame and one hand-off per batch."""
        pcm = bytearray()
        for packet in packets:
            try:
                pcm += self.decoder.decode(packet)
            except Exception as e:  # one corrupt packet must not deafen the session
                log.info("undecodable Opus packet (%d bytes): %s", len(packet), e)
        if keep_manual and len(self._manual) + len(pcm) <= MAX_MANUAL_BYTES:
            self._manual += pcm
        windows, raw = detector.take(bytes(pcm))
        return windows, (raw, len(pcm) // 32)

    async def _process_batch(self):
        async with self._batch_lock:
            await self._judge_batch()

    async def _judge_batch(self):
        packets = []
        while self._frames:
            packets.append(self._frames.popleft())
        if not packets:
            return
        manual = self.mode == "manual"
        generation = self._generation
        detector = await self._ensure_detector()
        if self._reset_detector:
            self._reset_detector = False
            detector.reset()
        self._judging = True
        try:
            probs, (raw, heard_ms) = await detector.vad.judge_after(
                functools.partial(self._decode, packets, detector, manual))
        finally:
            self._judging = False
        events = detector.judge(probs, raw)
        if generation != self._generation:
            return  # dropped meanwhile (a wake word): the next batch starts afresh
        self.heard_ms += heard_ms
        self.progress.set()
        for ev in events:
            if ev.kind == "start":
                self._manual_speech = True
                self._resume()
                if not manual:
                    await self._open_stream()
                await self._on_start()
            elif ev.kind == "end" and not manual:
                stream = await self._end_stream(ev.audio)
                self._speculate(self._prefix + ev.audio, ev.at_ms, stream)
                self._prefix = b""
        if self._stream is not None:
            await self._feed_stream(detector, manual)
        # A start after the speculative end has withdrawn it already; a start
        # before it in this batch is the same words' beginning.
        t = self._tentative
        if t is not None:
            t.heard_ms = detector.position_ms - t.at_ms
            self._commit_if_quiet(t)

    def _commit_if_quiet(self, t):
        # Not while a voice may be starting again: wait for the VAD's verdict.
        if t.wait_ms is not None and t.heard_ms >= t.wait_ms and not (
                self.detector is not None and self.detector.onset):
            self._commit(t)

    # ---- the streaming ASR of the utterance being heard ----

    async def _open_stream(self):
        """The VAD's turn start: a stream for the utterance (the words of the
        one it joins first)."""
        if not self.asr.streaming:
            return
        self._drop_stream()   # one left open when listening stopped mid-utterance
        stream = self._new_stream()
        if self._prefix:
            await stream.push(self._prefix)

    def _new_stream(self):
        def moved(_text):
            self._partial_moved(stream)
        self._stream = stream = self.asr.open(moved)
        self._streams.add(stream)
        self._pushed = 0
        return stream

    async def _feed_stream(self, detector, manual):
        """What was heard since the last batch: the VAD's utterance in auto
        mode, everything since listen start in push to talk."""
        fresh = bytes(self._manual[self._pushed:]) if manual else detector.utterance_since(self._pushed)
        if fresh:
            self._pushed += len(fresh)
            await self._stream.push(fresh)

    async def _end_stream(self, audio):
        """The VAD's end: the rest of `audio` (the detector's whole utterance)
        goes in, and the stream is handed to the speculative end to finish."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.push(audio[self._pushed:])
        return stream

    def _drop_stream(self):
        stream, self._stream = self._stream, None
        self._discard(stream)

    def _discard(self, stream):
        """Cancel a stream no longer wanted (its connection closes)."""
        if stream is None or stream not in self._streams:
            return
        self._streams.discard(stream)
        task = asyncio.create_task(stream.cancel())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    @property
    def partial(self) -> str:
        """The words a streaming ASR has heard of the utterance so far ("" if none)."""
        return self._stream.partial if self._stream is not None else ""

    def _speculate(self, audio, at_ms, stream=None):
        # No commit before there are words: no reply can be heard before
        # them anyway, and they choose how long the silence must last. A
        # streaming ASR's partial words give a first guess at once.
        loop = asyncio.get_running_loop()
        t = self._tentative = _Tentative(audio, loop.create_future(), at_ms, None, loop.time(), stream)
        if stream is not None and self.early_reply:
            t.early = EarlyReply()
        t.asr = self._finish_audio(audio, t.commit, stream, t.early)
        if stream is not None and stream.partial:
            self._words_heard(t, stream.partial)
        if t.early is not None:
            t.early.wait_for_quiet(functools.partial(self._start_early, t))

    def _partial_moved(self, stream):
        """A stream's words changed: after the end, the early reply waits on."""
        t = self._tentative
        if t is not None and t.stream is stream and t.early is not None and not t.final:
            t.early.wait_for_quiet(functools.partial(self._start_early, t))

    def _start_early(self, t):
        """The streaming words stopped changing after the end: a reply is
        started on them (held until the final text and the commit agree)."""
        early = t.early
        early.timer = None
        if t.final or (t.commit.done() and not t.commit.result()):
            return      # the final text is there, or the child went on
        commit = early.start(t.stream.partial)
        if commit is None:
            return
        self.early_started += 1
        commit.add_done_callback(self._count_early)
        log.info("replying early on the streaming words %r", early.text)
        utt = early.utterance = Turn(early.text, len(t.audio) // 32, t.ended_at, 0.0, commit, early=True)
        task = asyncio.create_task(self._on_utterance(utt))
        self._asr_tasks.add(task)
        task.add_done_callback(self._asr_tasks.discard)

    def _count_early(self, commit):
        if not commit.cancelled() and commit.result() is False:
            self.early_wasted += 1

    def _words_heard(self, t, text, stable=False):
        """Words of the tentative utterance (partial, final, or "" when ASR
        failed): the silence they need. Later words replace earlier ones;
        `stable`: final words a streaming recogniser's partials agreed on."""
        if t.commit.done() or self._tentative is not t:
            return
        if t.timer is not None:
            t.timer.cancel()
        t.wait_ms = self.commit.for_text(text, stable) - self.silence_ms
        # If the device stops sending audio, commit on the clock instead.
        t.timer = asyncio.get_running_loop().call_at(t.since + t.wait_ms / 1000.0 + 0.15,
                                                     self._commit_on_clock, t)
        self._commit_if_quiet(t)

    def _commit_on_clock(self, t):
        # Audio still waiting for the VAD may hold the child's next words; so
        # may a voice just starting, for a second at most (a device that
        # stopped sending mid-onset leaves nothing to decide it).
        loop = asyncio.get_running_loop()
        starting = self.detector is not None and self.detector.onset and (
            loop.time() < t.since + t.wait_ms / 1000.0 + ONSET_PATIENCE_S)
        busy = not self.caught_up or starting
        if busy and self._tentative is t:
            t.timer = asyncio.get_running_loop().call_later(0.1, self._commit_on_clock, t)
            return
        self._commit(t)

    def _commit(self, t):
        if t.timer is not None:
            t.timer.cancel()
            t.timer = None
        if not t.commit.done():
            t.commit.set_result(True)
        if self._tentative is t:
            self._tentative = None

    def _withdraw(self):
        """The tentative utterance is not heard (its commit becomes False, so a
        reply prepared for it is dropped unheard): it, or None."""
        t = self._tentative
        if t is None or t.commit.done():
            return None
        if t.timer is not None:
            t.timer.cancel()
            t.timer = None
        t.commit.set_result(False)
        self._tentative = None
        if t.early is not None:
            t.early.drop()
        if not t.final and t.asr is not None:
            # Its words are not needed: a decode still waiting for the model
            # would delay every other child's (one decode at a time), and a
            # stream's connection is closed at once.
            t.asr.cancel()
            self._discard(t.stream)
        return t

    def _resume(self):
        """Speech again before the commit: the last words continue."""
        t = self._withdraw()
        if t is None:
            return
        self._prefix = t.audio
        self.resumed += 1
        log.info("the child went on after a pause: joining the utterances")

    def _finish_audio(self, audio, commit=None, stream=None, early=None):
        t = asyncio.create_task(self._transcribe(audio, time.monotonic(), commit, stream, early))
        self._asr_tasks.add(t)
        t.add_done_callback(self._asr_tasks.discard)
        return t

    async def _transcribe(self, audio, ended_at, commit=None, stream=None, early=None):
        t0 = time.monotonic()
        if stream is not None:
            try:
                text = await self.asr.finish(stream)
            finally:
                self._streams.discard(stream)
        else:
            text = await self.asr.words(audio)
        failed = isinstance(text, AsrFailed)
        t = self._tentative
        if t is not None and t.commit is commit:
            t.final = True
            # The two passes agree (the partial streamed while the child spoke
            # says what the final says): a question may be heard sooner.
            stable = not failed and stream is not None and same_words(stream.streamed, text)
            self._words_heard(t, "" if failed else text, stable)
        asr_ms = (time.monotonic() - t0) * 1000
        if not failed:
            log.info("heard %r (%.1f s of audio, ASR %.0f ms)", text, len(audio) / 32000, asr_ms)
        if early is not None and early.final(None if failed else text, commit):
            return  # the reply started on the streaming words answers these words
        if commit is not None and not commit.done() and (failed or not self.commit.prepare_reply(text)):
            # "and...", or nothing heard: nothing to prepare before the silence says it is over
            await asyncio.shield(commit)
        if commit is not None and commit.done() and not commit.result():
            return  # the child went on; the joined utterance comes next
        if failed:
            await self._on_utterance(Turn("", len(audio) // 32, ended_at, asr_ms, commit, text.reason))
        elif text:
            await self._on_utterance(Turn(text, len(audio) // 32, ended_at, asr_ms, commit))

    async def _run(self):
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._process_batch()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("audio processing failed; listening goes on")

    async def close(self) -> None:
        if self._tentative is not None and self._tentative.timer is not None:
            self._tentative.timer.cancel()
        if self._tentative is not None and self._tentative.early is not None:
            self._tentative.early.drop()
        self._stream = None
        streams, self._streams = list(self._streams), set()
        for t in [self._task, *self._asr_tasks]:
            if t is not None:
                t.cancel()
        for t in [self._task, *self._asr_tasks]:
            if t is not None:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
        self._task = None
        # Every stream's connection closed (an ASR task cancelled before it
        # ran never cancelled its stream).
        await asyncio.gather(*(s.cancel() for s in streams), *self._closing, return_exceptions=True)
