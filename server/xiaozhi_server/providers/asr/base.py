"""Streaming ASR: one stream per utterance, and the adapters between batch
and streaming recognizers.

A stream is opened when the child starts speaking. The listener pushes
16 kHz mono int16 PCM into it while the child speaks (`push`), may read
the words heard so far (`partial`, and `on_partial` is called on each
change), and at the end of the turn awaits `finish()` for the final text.
A stream that is no longer wanted (the child went on after a pause and
the utterances are joined, or an abort) is dropped with `cancel()`.

    stream = open_stream(asr, language="zh", on_partial=print)
    await stream.push(pcm)            # as often as audio arrives
    text = await stream.finish()      # AsrError when no text can be had

Two adapters make every provider offer both interfaces:
- `open_stream(asr, ...)` gives a batch provider (Whisper) a stream that
  keeps the audio and transcribes it whole at `finish()` (no partials);
- `StreamingAsr`, the base of streaming providers, gives them the batch
  `transcribe(pcm16k, language)`: one stream, all audio pushed, finished.

Errors: `push()` never waits on the network and never raises for the
service (a stream queues its audio while it connects); everything that
goes wrong with the service comes out of `finish()` as an `AsrError`,
whose `reason` says what happened (see AsrError). The caller maps it to
its fallback (providers.asr.fallback) or, with none left, to its spoken
"I could not hear that" line.
"""
from __future__ import annotations

from typing import Any, Callable

SAMPLE_RATE = 16000
BYTES_PER_SECOND = SAMPLE_RATE * 2

PartialCallback = Callable[[str], None]


class AsrError(Exception):
    """The recognizer could not give the words of an utterance.

    `reason` is one of:
    - "connection": the service could not be reached or refused the connection;
    - "timeout": it did not answer within its timeout (connect, or the final text);
    - "auth": it refused our credentials (HTTP 401/403);
    - "refused": it answered with another error status (`status` holds it);
    - "closed": it cut the connection or the response before the final text;
    - "bad_response": it answered something that is not its protocol.
    The message names the provider and never holds a credential.
    """

    REASONS = ("connection", "timeout", "auth", "refused", "closed", "bad_response")

    def __init__(self, provider: str, reason: str, detail: str, status: int | None = None) -> None:
        if reason not in self.REASONS:
            raise ValueError("unknown ASR error reason %r" % reason)
        super().__init__("%s ASR %s: %s" % (provider, reason, detail))
        self.provider = provider
        self.reason = reason
        self.detail = detail
        self.status = status


class AsrStream:
    """One utterance's recognition. Subclasses implement push, finish and cancel.

    `script`, when set by the caller, rewrites every partial text before it
    is kept or reported (the ASR stage puts Chinese in Simplified with it)."""

    script: Callable[[str], str] | None = None
    # The partial words just before the recogniser's last correcting pass
    # (a 2pass server's offline result): a final text that says the same
    # words was not rewritten, the streaming pass had it right ("" when the
    # provider cannot tell; the turn rule then takes no shortcut).
    streamed = ""
    # Words this child is likely to say (their name, command words), set by
    # the caller before the first push: a recogniser that takes hotwords
    # (FunASR) weighs them up; others ignore them.
    words: tuple[str, ...] = ()

    def __init__(self, on_partial: PartialCallback | None = None) -> None:
        self.partial = ""              # the words heard so far ("" until the first partial)
        self._on_partial = on_partial

    def _set_partial(self, text: str) -> None:
        if self.script is not None:
            text = self.script(text)
        if text == self.partial:
            return
        self.partial = text
        if self._on_partial is not None:
            self._on_partial(text)

    async def push(self, pcm16k: bytes) -> None:
        raise NotImplementedError

    async def finish(self) -> str:
        raise NotImplementedError

    async def cancel(self) -> None:
        """Drop the utterance: no result is wanted, connections are closed."""


class BufferedStream(AsrStream):
    """A batch provider behind the stream interface: the audio is kept and
    transcribed whole at finish(). It has no partial text."""

    def __init__(self, asr: Any, language: str | None = None, on_partial: PartialCallback | None = None) -> None:
        super().__init__(on_partial)
        self.asr = asr
        self.language = language
        self._audio = bytearray()

    async def push(self, pcm16k: bytes) -> None:
        self._audio += pcm16k

    async def finish(self) -> str:
        text = await self.asr.transcribe(bytes(self._audio), language=self.language)
        self._audio = bytearray()
        return text

    async def cancel(self) -> None:
        self._audio = bytearray()


def open_stream(asr: Any, language: str | None = None, on_partial: PartialCallback | None = None) -> AsrStream:
    """A stream for one utterance from any ASR provider: its own when it
    streams, else one that transcribes the kept audio at the end."""
    opener = getattr(asr, "open_stream", None)
    if opener is not None:
        stream: AsrStream = opener(language=language, on_partial=on_partial)
        return stream
    return BufferedStream(asr, language, on_partial)


class StreamingAsr:
    """Base of streaming providers: `transcribe` is a stream with all the
    audio pushed at once, so the batch callers work unchanged."""

    name = "asr"

    def open_stream(self, language: str | None = None, on_partial: PartialCallback | None = None) -> AsrStream:
        raise NotImplementedError

    async def transcribe(self, pcm16k: bytes, language: str | None = None) -> str:
        stream = self.open_stream(language=language)
        try:
            await stream.push(pcm16k)
            return await stream.finish()
        finally:
            await stream.cancel()   # closes what finish left open after an error
