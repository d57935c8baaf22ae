"""A chain of TTS providers: when one fails, the next one speaks.

Config: `{"type": "fallback", "providers": [{...}, {...}]}`. A member that
cannot be built here (missing extra or binary) is skipped and remembered
in `unavailable`. The text is first split (text/split.py) so that every piece
fits the smallest limit of the chain; each piece then goes to the first
provider that renders it. A provider that fails before producing audio for
a piece hands that piece to the next one; one that fails midway through a
piece loses only the rest of that piece. When no provider can speak a
piece, `stream()` yields a `TextOnly` for it, so the caller still sends the
words as a subtitle and nothing said is lost.
"""
import asyncio
import logging

from ..audio import AudioChunk, TextOnly
from ..registry import ProviderError, create, register
from ...text.split import split_for_limit
from .base import TtsProvider

log = logging.getLogger(__name__)


@register("tts", "fallback")
class FallbackTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("providers",)

    def __init__(self, config):
        super().__init__(config)
        self.members = []
        self.unavailable = []
        for sub in config.get("providers") or []:
            if isinstance(sub, TtsProvider):
                self.members.append(sub)
                continue
            try:
                self.members.append(create("tts", sub))
            except ProviderError as exc:
                log.warning("TTS provider %s skipped: %s", sub.get("type"), exc)
                self.unavailable.append("%s: %s" % (sub.get("type"), exc))
        limits = [m.max_chars for m in self.members] or [self.max_chars]
        self.max_chars = int(config.get("max_chars", min(limits)))

    async def stream(self, text, voice=None):
        for piece in split_for_limit(text, self.max_chars):
            errors = list(self.unavailable)
            spoken = False
            for member in self.members:
                produced = False
                try:
                    async for chunk in member.stream(piece, voice):
                        produced = True
                        yield chunk
                    spoken = True
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    reason = "%s: %s" % (member.name, exc or type(exc).__name__)
                    log.warning("TTS %s failed on %r: %s", member.name, piece[:40], exc)
                    errors.append(reason)
                    if produced:
                        spoken = True
                        break
            if not spoken:
                yield TextOnly(piece, errors)

    async def synthesize(self, text, voice=None):
        """All audio of `text` in one chunk, or a TextOnly when none could be rendered."""
        pcm = bytearray()
        rate = None
        failed = []
        async for item in self.stream(text, voice):
            if item.text_only:
                failed.append(item)
                continue
            if rate is None:
                rate = item.rate
            if item.rate != rate:
                from ...audio.resample import resample_once
                pcm += resample_once(item.pcm, item.rate, rate)
            else:
                pcm += item.pcm
        if rate is None:
            return TextOnly(text, [e for f in failed for e in f.errors])
        return AudioChunk(bytes(pcm), rate)
