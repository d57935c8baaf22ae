import opuslib
import pytest

from testkit import audio
from xiaozhi_server.pipeline.opus import OpusDecoder, OpusEncoder
from xiaozhi_server.audio.resample import Resampler, resample_once


def test_downstream_24k_60ms_frames_decode_back_to_the_same_tone():
    pcm = audio.tone(440, 1000, 24000)
    enc = OpusEncoder()
    frames = []
    for i in range(0, len(pcm), 1234):  # arbitrary chunk sizes, odd ones too
        frames += enc.encode(pcm[i:i + 1234])
    frames += enc.flush()
    assert len(frames) == 17  # 1000 ms -> 16 full frames + a padded last one
    dec = opuslib.Decoder(24000, 1)
    out = b"".join(dec.decode(f, 1440) for f in frames)
    assert len(out) == 17 * 1440 * 2
    assert abs(audio.dominant_hz(out[:48000], 24000) - 440) < 5
    assert audio.rms(out[4800:48000]) > 0.5 * audio.rms(pcm)


def test_upstream_16k_frames_from_the_device_decode_to_speech():
    speech = audio.speech("Hello my friend", rate=16000)
    dev = opuslib.Encoder(16000, 1, opuslib.APPLICATION_VOIP)
    dec = OpusDecoder()
    out = bytearray()
    for i in range(0, len(speech) - 1920 + 1, 1920):
        out += dec.decode(dev.encode(speech[i:i + 1920], 960))
    assert len(out) == (len(speech) // 1920) * 1920
    assert audio.voiced_fraction(bytes(out), 16000) > 0.3
    assert len(dec.decode(b"")) == 1920  # a lost frame is concealed, not an error


def test_resampler_streams_any_rate_to_24k():
    pcm = audio.tone(500, 1000, 22050)
    r = Resampler(22050)
    out = b"".join(r.process(pcm[i:i + 4410]) for i in range(0, len(pcm), 4410)) + r.flush()
    assert len(out) // 2 == pytest.approx(24000, abs=2)
    assert abs(audio.dominant_hz(out, 24000) - 500) < 5
    assert resample_once(pcm, 22050, 22050) == pcm
