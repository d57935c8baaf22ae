"""Real speech and audio measurements for tests (espeak-ng, sox-free).

    pcm = speech("Hello there", rate=16000)          # espeak-ng, English
    pcm = speech("你好", voice="cmn-latn-pinyin")      # espeak-ng, Mandarin
    pcm = silence(500, 16000)
    rms(pcm), dominant_hz(pcm, rate), seconds(pcm, rate)

All PCM is mono int16 little-endian bytes.
"""
import io
import subprocess
import wave

import numpy as np


def read_wav(data):
    with wave.open(io.BytesIO(data), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        return w.readframes(w.getnframes()), w.getframerate()


def make_wav(pcm, rate):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return buf.getvalue()


def resample(pcm, src, dst):
    if src == dst:
        return pcm
    import soxr
    x = np.frombuffer(pcm, dtype="<i2")
    return soxr.resample(x, src, dst).astype("<i2").tobytes()


def speech(text, rate=16000, voice="en-us", speed=150):
    """Speech from espeak-ng, resampled to `rate`."""
    out = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text],
                         check=True, capture_output=True).stdout
    pcm, src = read_wav(out)
    return resample(pcm, src, rate)


def silence(ms, rate=16000):
    return bytes(2 * (rate * ms // 1000))


def tone(hz, ms, rate=24000, amplitude=8000):
    t = np.arange(rate * ms // 1000) / rate
    return (np.sin(2 * np.pi * hz * t) * amplitude).astype("<i2").tobytes()


def seconds(pcm, rate):
    return len(pcm) / 2 / rate


def rms(pcm):
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(x * x))) if len(x) else 0.0


def dominant_hz(pcm, rate):
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spec) * rate / len(x))


def voiced_fraction(pcm, rate, frame_ms=30, floor=300.0):
    """Share of frames louder than `floor` RMS: a rough 'is this speech' measure."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    n = rate * frame_ms // 1000
    frames = [x[i:i + n] for i in range(0, len(x) - n + 1, n)]
    if not frames:
        return 0.0
    loud = sum(1 for f in frames if np.sqrt(np.mean(f * f)) > floor)
    return loud / len(frames)


# Piper varies its voice at random on every call; a test's speech must not.
STEADY_PIPER = {"type": "piper", "noise_scale": 0.0, "noise_w_scale": 0.0}


async def english_speech(text, rate=16000):
    """Natural English speech from the server's own Piper voice, at `rate`:
    the same every run (the voice's random variation off), so a test that
    reads it back hears what it heard the last time."""
    from xiaozhi_server.providers.registry import create
    chunk = await create("tts", STEADY_PIPER).synthesize(text)
    return resample(chunk.pcm, chunk.rate, rate)
