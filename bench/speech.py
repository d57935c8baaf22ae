"""Speech the benchmarks feed the server, made with the server's own Piper voice.

`say(text)` gives 16 kHz mono int16 PCM with the voice's leading and
trailing silence cut off, so the true end of speech is the last sample.
`speech_end_ms` finds that end in any PCM by short-time energy; the
turn-taking figures measure the detector against it.
"""
import numpy as np

from xiaozhi_server.audio.resample import resample_once
from xiaozhi_server.providers.tts.piper import _default_model, load_voice

RATE = 16000
ENERGY_WINDOW = 160      # 10 ms at 16 kHz
ENERGY_FLOOR = 150.0     # RMS above this is sound; Piper's silence is near zero

_cache = {}


def _windows_rms(pcm):
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    n = len(x) // ENERGY_WINDOW
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    w = x[:n * ENERGY_WINDOW].reshape(n, ENERGY_WINDOW)
    return np.sqrt(np.mean(w * w, axis=1))


def sound_bounds_ms(pcm):
    """(first, last) 10 ms window with sound, in ms; None for silence."""
    loud = np.nonzero(_windows_rms(pcm) > ENERGY_FLOOR)[0]
    if len(loud) == 0:
        return None
    return int(loud[0]) * 10, int(loud[-1] + 1) * 10


def speech_end_ms(pcm):
    bounds = sound_bounds_ms(pcm)
    return bounds[1] if bounds else 0


def trim(pcm):
    bounds = sound_bounds_ms(pcm)
    if bounds is None:
        return b""
    a, b = bounds
    return pcm[a * RATE // 1000 * 2:b * RATE // 1000 * 2]


def say(text):
    """Piper speech of `text` at 16 kHz, silence trimmed (cached per text)."""
    pcm = _cache.get(text)
    if pcm is None:
        voice = load_voice(*_default_model())
        parts = list(voice.synthesize(text))
        raw = b"".join(p.audio_int16_bytes for p in parts)
        pcm = _cache[text] = trim(resample_once(raw, parts[0].sample_rate, RATE))
    return pcm


def silence(ms):
    return bytes(2 * (RATE * ms // 1000))


def seconds(pcm):
    return len(pcm) / 2.0 / RATE
