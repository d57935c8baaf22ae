"""What the pipeline uses of each provider kind, for the type checker.

Providers are duck-typed and registered by name (registry.py): these
Protocols write down the calls the session, listener and speaker make, so
a new adapter knows what to offer and mypy checks the callers. TTS has a
real base class (tts.base.TtsProvider) because it shares code. Anything a
provider may also offer is looked up with getattr: `warm_up()` (load now,
services.warm_up), an LLM's `configured` (False = the "no model" line) and
its `prepare(messages, tools)` (read a session's fixed head before its first
turn: Dialogue.prepare).

ASR comes in two shapes: every provider transcribes a whole utterance
(AsrProvider); a streaming one also opens a stream per utterance that takes
audio while the child speaks (StreamingAsrProvider). asr.base.open_stream
gives any provider the stream shape and asr.base.StreamingAsr gives a
streaming one the batch shape, so callers pick the shape they need.
"""
from __future__ import annotations

from typing import Any, AsyncGenerator, AsyncIterator, Callable, Protocol, Sequence, Union

from .audio import AudioChunk, TextOnly
from .llm.events import Done, LlmError, TextDelta, ToolCall

# What LlmProvider.stream_chat yields (llm/events.py says in which order).
LlmEvent = Union[TextDelta, ToolCall, Done, LlmError]


class AsrProvider(Protocol):
    async def transcribe(self, pcm16k: bytes, language: str | None = None) -> str:
        """Text of 16 kHz mono int16 PCM; language like "en" or "zh" when known."""
        ...


class PromptedAsr(Protocol):
    """A batch recogniser that reads a prompt (`takes_prompt`: Whisper):
    words this child is likely to say, read as said before."""

    takes_prompt: bool

    async def transcribe(self, pcm16k: bytes, language: str | None = None, prompt: str = "") -> str: ...


class AsrStreamLike(Protocol):
    """One utterance's recognition (asr.base.AsrStream): push audio while the
    child speaks, read `partial`, then `finish()` for the final text. push
    never raises for the service; finish raises asr.base.AsrError."""

    partial: str

    async def push(self, pcm16k: bytes) -> None:
        ...

    async def finish(self) -> str:
        ...

    async def cancel(self) -> None:
        ...


class StreamingAsrProvider(AsrProvider, Protocol):
    def open_stream(self, language: str | None = None,
                    on_partial: Callable[[str], None] | None = None) -> AsrStreamLike:
        """A stream for one utterance; on_partial(text so far) runs on the event loop."""
        ...


class VadStream(Protocol):
    """One connection's recurrent VAD state."""

    window: int

    def probability(self, samples: Any, offset: int = 0) -> float:
        """Speech probability of one window of int16 samples (blocking)."""
        ...

    async def judge(self, windows: Any) -> Sequence[float]:
        """Probabilities of float32 windows [k, window] in [-1, 1]."""
        ...

    async def judge_after(self, prepare: Any) -> tuple[Sequence[float], Any]:
        """(probabilities, extra) of the windows prepare() returns as (windows, extra),
        prepare running where the VAD runs."""
        ...

    def reset(self) -> None:
        ...


class VadProvider(Protocol):
    def open(self) -> VadStream:
        ...


class LlmProvider(Protocol):
    def stream_chat(self, messages: list[dict], tools: list[dict] | None = None,
                    **options: Any) -> AsyncGenerator[LlmEvent, None]:
        ...


class TtsLike(Protocol):
    """What the speaker calls: tts.base.TtsProvider and its subclasses. A
    TextOnly is a piece no voice could speak (tts.fallback)."""

    def stream(self, text: str, voice: str | None = None) -> AsyncIterator[AudioChunk | TextOnly]:
        ...
