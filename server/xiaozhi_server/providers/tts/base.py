"""What every TTS provider offers.

A provider implements `synthesize(text, voice=None) -> AudioChunk`. A
provider that can deliver audio before the whole text is rendered also
overrides `stream()`, an async iterator of AudioChunk; everyone else gets
the one-chunk default. `max_chars` is the longest text the provider takes
in one call: longer text is split by the caller (see text/split.py).
"""

from typing import AsyncIterator

from ..audio import AudioChunk, TextOnly

DEFAULT_MAX_CHARS = 500


class TtsProvider:
    # Keys every TTS reads (registry.options joins a provider's own to these).
    OPTIONS: tuple[str, ...] = ("max_chars",)
    max_chars = DEFAULT_MAX_CHARS

    def __init__(self, config: dict) -> None:
        self.config = config
        self.name = config.get("name") or config.get("type", type(self).__name__)
        self.max_chars = int(config.get("max_chars", self.max_chars))

    async def synthesize(self, text: str, voice: str | None = None) -> AudioChunk:
        raise NotImplementedError

    async def stream(self, text: str, voice: str | None = None) -> AsyncIterator[AudioChunk | TextOnly]:
        yield await self.synthesize(text, voice)


class TtsError(Exception):
    """A provider failed to render a text (the fallback chain tries the next one)."""
