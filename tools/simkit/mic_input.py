"""Microphone input for the simulated board: text or a WAV file becomes a
directory of 16 kHz mono 60 ms Opus frames, one file each, which the
firmware's `mic DIR` console command feeds to its I2S mic on either
interpreter (the board's C module would encode; here opuslib does).

    frames_dir = speak_to_frames("What is two plus two?", out_dir)
    frames_dir = wav_to_frames("question.wav", out_dir)

Speech is followed by a second of encoded silence so the server's voice
activity detector hears the end of the turn, as it would from a real mic.
"""
import asyncio
import io
import os
import wave

import numpy as np

RATE = 16000
FRAME_SAMPLES = RATE * 60 // 1000  # 960
TRAILING_SILENCE_MS = 1200


def _resample(pcm, src, dst):
    if src == dst:
        return pcm
    import soxr
    x = np.frombuffer(pcm, dtype="<i2")
    return soxr.resample(x, src, dst).astype("<i2").tobytes()


def read_wav(data):
    """Any PCM16 WAV (bytes) -> 16 kHz mono PCM16."""
    with wave.open(io.BytesIO(data), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError("the WAV must be 16-bit PCM, not %d-bit" % (8 * w.getsampwidth()))
        channels, rate = w.getnchannels(), w.getframerate()
        pcm = w.readframes(w.getnframes())
    if channels > 1:  # the board has one microphone: mix down
        x = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels).astype(np.int32)
        pcm = (x.sum(axis=1) // channels).astype("<i2").tobytes()
    return _resample(pcm, rate, RATE)


def synthesize(text):
    """Text -> 16 kHz PCM16 with the server's own voices (Piper for English,
    espeak-ng for Chinese), so the server's ASR hears what it would say."""
    from xiaozhi_server.providers import create
    tts = create("tts", {"type": "router"})
    chunk = asyncio.run(tts.synthesize(text))
    return _resample(chunk.pcm, chunk.rate, RATE)


def encode_frames(pcm, out_dir):
    """PCM16 at 16 kHz -> out_dir/00000.opus ...; returns the frame count."""
    import opuslib
    enc = opuslib.Encoder(RATE, 1, opuslib.APPLICATION_VOIP)
    os.makedirs(out_dir, exist_ok=True)
    pcm = pcm + bytes(2 * RATE * TRAILING_SILENCE_MS // 1000)
    step = 2 * FRAME_SAMPLES
    n = 0
    for i in range(0, len(pcm), step):
        block = pcm[i:i + step]
        if len(block) < step:
            block += bytes(step - len(block))
        with open(os.path.join(out_dir, "%05d.opus" % n), "wb") as f:
            f.write(enc.encode(block, FRAME_SAMPLES))
        n += 1
    return n


def speak_to_frames(text, out_dir):
    encode_frames(synthesize(text), out_dir)
    return out_dir


def wav_to_frames(path, out_dir):
    with open(path, "rb") as f:
        encode_frames(read_wav(f.read()), out_dir)
    return out_dir


def sound_card_available():
    """A capture device the sim could record from (ALSA's card list)."""
    try:
        with open("/proc/asound/cards") as f:
            return "no soundcards" not in f.read()
    except OSError:
        return False
