"""espeak-ng TTS, the offline Mandarin default (voice cmn-latn-pinyin).

espeak-ng 1.51 reads Han characters itself with this voice (its Mandarin
dictionary maps them to pinyin, tone sandhi included), so no pinyin
conversion is needed; the plain `cmn` voice would read pinyin with English
phonemes. Config keys: `voice` (default cmn-latn-pinyin), `speed` (words
per minute, default 150), `pitch` (0-99), `binary` (default espeak-ng),
`timeout` (seconds, default 20), `max_chars`.
"""
import asyncio
import shutil

from ..audio import wav_to_chunk
from ..registry import ProviderUnavailable, register
from .base import TtsError, TtsProvider


@register("tts", "espeak")
class EspeakTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("voice", "speed", "pitch", "timeout", "binary")

    def __init__(self, config):
        super().__init__(config)
        self.voice = config.get("voice", "cmn-latn-pinyin")
        self.speed = int(config.get("speed", 150))
        self.pitch = config.get("pitch")
        self.timeout = float(config.get("timeout", 20))
        binary = config.get("binary", "espeak-ng")
        self.binary = shutil.which(binary)
        if self.binary is None:
            raise ProviderUnavailable("espeak TTS needs the %r program (Debian package espeak-ng)" % binary)

    async def synthesize(self, text, voice=None):
        args = [self.binary, "-v", voice or self.voice, "-s", str(self.speed), "--stdout"]
        if self.pitch is not None:
            args += ["-p", str(int(self.pitch))]
        # The text goes through stdin so a text starting with "-" is never an option.
        proc = await asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(text.encode("utf-8")), self.timeout)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        if proc.returncode != 0 or not out:
            raise TtsError("espeak-ng failed (exit %s): %s" % (proc.returncode, err.decode("utf-8", "replace").strip()))
        return wav_to_chunk(out)
