"""Host HAL audio under CPython with real Opus (opuslib + libopus0):
a WAV into the mic comes out as Opus frames, Opus frames into the speaker
come out as a WAV file a person could listen to."""
import asyncio
import math
import struct

import opuslib
import pytest

from simkit import use_host_hal

use_host_hal()   # the board's host HAL, found the way the simulator finds it
from hal.host import board, wav  # noqa: E402


def tone(rate, hz, seconds, amp=8000):
    n = int(rate * seconds)
    return struct.pack("<%dh" % n, *(int(amp * math.sin(2 * math.pi * hz * i / rate)) for i in range(n)))


def pitch(pcm, rate):
    """Frequency from zero crossings of 16-bit mono PCM."""
    s = struct.unpack("<%dh" % (len(pcm) // 2), pcm)
    crossings = sum(1 for a, b in zip(s, s[1:]) if a < 0 <= b)
    return crossings / (len(s) / rate)


@pytest.fixture
def dev(tmp_path):
    return board(str(tmp_path / "state"), speed=50, exit_fn=lambda code: None)


def test_mic_from_wav_gives_decodable_60ms_frames(dev, tmp_path):
    path = str(tmp_path / "q.wav")
    wav.write(path, 16000, tone(16000, 440, 0.6))
    dev.mic.feed_wav(path)
    assert dev.mic.pending() == 10  # 600 ms in 60 ms frames
    buf = bytearray(1500)

    async def read_all():
        frames = []
        while True:
            n = await dev.mic.read_frame(buf)
            if not n:
                return frames
            frames.append(bytes(buf[:n]))
    frames = asyncio.run(read_all())
    dec = opuslib.Decoder(16000, 1)
    pcm = b"".join(dec.decode(f, 960) for f in frames)
    assert len(pcm) == 10 * 960 * 2
    assert 400 < pitch(pcm[3200:], 16000) < 480


def test_speaker_writes_one_wav_per_reply(dev):
    enc = opuslib.Encoder(24000, 1, opuslib.APPLICATION_AUDIO)
    pcm = tone(24000, 660, 1.2)
    step = 1440 * 2
    frames = [enc.encode(pcm[i:i + step], 1440) for i in range(0, len(pcm), step)]

    async def play(volume):
        dev.speaker.set_volume(volume)
        dev.speaker.begin_reply()
        for f in frames:
            await dev.speaker.write_frame(f)
        await dev.speaker.drain()
        return dev.speaker.end_reply()
    loud = asyncio.run(play(100))
    quiet = asyncio.run(play(25))
    assert loud.endswith("reply_0001.wav") and quiet.endswith("reply_0002.wav")
    rate, ch, out = wav.read(loud)
    assert (rate, ch, len(out)) == (24000, 1, 20 * 1440 * 2)
    assert 620 < pitch(out[4800:], 24000) < 700
    peak = lambda p: max(abs(v) for v in struct.unpack("<%dh" % (len(p) // 2), p))
    q = wav.read(quiet)[2]
    assert peak(q) < peak(out) * 0.4  # the volume reached the output
