"""The gate in front of silero skips the microphone's noise floor, and
nothing else: quiet speech starts and ends turns as it did without it, and
a loud noise is still judged by the model.

The speech is the server's Piper voice rendered without its random
variation (noise scales 0), so every run hears the same words: the model's
verdicts on a syllable near its threshold depend on what it heard seconds
before, and a random rendering now and then puts one there
(docs/bench.md has the figures over random renderings).
"""
import numpy as np
import pytest

from testkit import audio
from testkit.wire_device import opus_frames
from xiaozhi_server.pipeline.opus import OpusDecoder
from xiaozhi_server.pipeline.turn import EndOfTurnDetector
from xiaozhi_server.providers import create
from xiaozhi_server.providers.tts.piper import _default_model, load_voice

NOISE_RMS = 40.0          # a quiet room through a device's microphone
WINDOW_MS = 32
PHRASES = ("Can you tell me a story", "about a little red fox", "I want to hear it now")


def heard_through_opus(pcm, seed):
    """PCM plus the noise floor, as the server decodes it from the device's frames."""
    rng = np.random.default_rng(seed)
    x = np.frombuffer(pcm, dtype="<i2") + rng.standard_normal(len(pcm) // 2) * NOISE_RMS
    dec = OpusDecoder()
    return [dec.decode(p) for p in opus_frames(np.clip(x, -32768, 32767).astype("<i2").tobytes())]


def piper_speech(text):
    """16 kHz speech of the server's Piper voice, the same every time."""
    from piper import SynthesisConfig
    voice = load_voice(*_default_model())
    parts = list(voice.synthesize(text, SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)))
    return audio.resample(b"".join(p.audio_int16_bytes for p in parts), parts[0].sample_rate, 16000)


def quiet_speech(level):
    """Three phrases at `level` of Piper's loudness, each after a long floor."""
    pcm = bytearray()
    for text in PHRASES:
        spoken = np.frombuffer(piper_speech(text), dtype="<i2") * level
        pcm += audio.silence(2500) + spoken.astype("<i2").tobytes()
    return bytes(pcm + audio.silence(1500))


async def turn_events(vad_config, frames):
    """(events as (kind, at_ms), windows the model judged) for 60 ms frames fed as the listener feeds them."""
    vad = create("vad", dict(vad_config, type="silero"))
    det = EndOfTurnDetector(vad.open())
    judged0 = vad.batcher.windows
    events = []
    for f in frames:
        events += [(e.kind, e.at_ms) for e in await det.feed(f)]
    return events, vad.batcher.windows - judged0


@pytest.mark.parametrize("level", [0.1, 0.03])
async def test_quiet_speech_over_the_floor_starts_and_ends_turns_as_without_the_gate(level):
    frames = heard_through_opus(quiet_speech(level), seed=7)
    loudest = max(audio.rms(f) for f in frames)
    assert loudest < 0.15 * 32768   # quiet speech: under -16 dBFS in every 60 ms frame
    plain, all_windows = await turn_events({"gate": False}, frames)
    gated, judged = await turn_events({}, frames)
    # Every phrase is a turn of its own, without the gate and with it.
    assert [k for k, _ in plain] == ["start", "end"] * len(PHRASES)
    assert [k for k, _ in gated] == [k for k, _ in plain]
    # Each decided on the same window, or one window either side.
    for (_k, at), (_k2, at_gated) in zip(plain, gated):
        assert abs(at_gated - at) <= WINDOW_MS, (plain, gated)
    # And the floor between the phrases did not go to the model.
    assert judged < 0.6 * all_windows, (judged, all_windows)


async def test_a_loud_noise_after_a_long_floor_still_reaches_the_model():
    rng = np.random.default_rng(3)
    burst = (rng.standard_normal(16000 // 5) * 3000).astype("<i2").tobytes()   # 200 ms, -21 dBFS
    frames = heard_through_opus(audio.silence(3000) + burst + audio.silence(1500), seed=5)
    pcm = b"".join(frames)
    gated = create("vad", {"type": "silero"}).open()
    plain = create("vad", {"type": "silero", "gate": False}).open()
    samples = np.frombuffer(pcm, dtype="<i2")
    w = gated.window
    starts = range(0, len(samples) // w * w, w)
    p_gated = np.array([gated.probability(samples, k) for k in starts])
    p_plain = np.array([plain.probability(samples, k) for k in starts])
    loud = np.array([audio.rms(pcm[2 * k:2 * (k + w)]) > 1000 for k in starts])
    assert loud.sum() >= 5
    # The model judged every window of the burst (the gate's own verdict is exactly 0.0) ...
    assert np.all(p_gated[loud] > 0.0)
    assert np.allclose(p_gated[loud], p_plain[loud], atol=0.05)
    # ... and nothing in it or around it scored as speech, with the gate or without.
    assert p_gated.max() < 0.5 and p_plain.max() < 0.5
    # The floor before the burst was left to the gate once the model had heard it for a while.
    before = int(np.argmax(loud))
    assert np.all(p_gated[before - 40:before - 1] == 0.0)


def test_a_gate_setting_out_of_range_is_refused_with_its_name():
    with pytest.raises(ValueError, match="gate_hold"):
        create("vad", {"type": "silero", "gate_hold": 2})
