"""What the pipeline uses of each provider kind, for the type checker.

Providers are duck-typed and registered by name (registry.py): these
Protocols write down the calls the session, listener and speaker make, so
a new adapter knows what to offer and mypy checks the callers. TTS has a
real base class (tts_base.TtsProvider) because it shares code. Anything a
provider may also offer is looked up with getattr: `warm_up()` (load now,
services.warm_up), an LLM's `configured` (False = the "no model" line).
"""
from __future__ import annotations

from typing import Any, AsyncGenerator, AsyncIterator, Protocol, Sequence, Union

from .audio import AudioChunk, TextOnly
from .llm_events import Done, LlmError, TextDelta, ToolCall

# What LlmProvider.stream_chat yields (llm_events.py says in which order).
LlmEvent = Union[TextDelta, ToolCall, Done, LlmError]


class AsrProvider(Protocol):
    async def transcribe(self, pcm16k: bytes, language: str | None = None) -> str:
        """Text of 16 kHz mono int16 PCM; language like "en" or "zh" when known."""
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
    """What the speaker calls: tts_base.TtsProvider and its subclasses. A
    TextOnly is a piece no voice could speak (tts_fallback)."""

    def stream(self, text: str, voice: str | None = None) -> AsyncIterator[AudioChunk | TextOnly]:
        ...
