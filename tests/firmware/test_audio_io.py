# The board's audio streams (audio.AudioIn / AudioOut / Mp3Player over the
# xzaudio engine) where a build has them: the board, and the unix port of
# `make micropython`, whose host engine reads the mic from XZAUDIO_MIC and
# writes what the speaker plays to XZAUDIO_SPK (raw 16-bit mono, 24 kHz).
# Other interpreters have no such streams and skip these tests at the top.
import math
import os

import asyncio

import audio
import t

RATE = 24000            # the engine's I2S rate
TONE_HZ = 400
MP3 = "tests/firmware/data/cbr_1500ms_notag.mp3"


def _engine():
    return hasattr(audio, "AudioIn") and hasattr(os, "putenv")


def _sine(samples, rate, hz=TONE_HZ, amp=8000):
    pcm = bytearray(samples * 2)
    for i in range(samples):
        v = int(amp * math.sin(2 * math.pi * hz * i / rate))
        pcm[2 * i] = v & 0xFF
        pcm[2 * i + 1] = (v >> 8) & 0xFF
    return pcm


def _cycles(pcm, threshold=2000, state=None):
    """Full periods in int16 LE PCM, counted with hysteresis; pass the same
    state list to count across chunks."""
    state = state if state is not None else [0, False]
    n, high = state
    for i in range(0, len(pcm) - 1, 2):
        v = pcm[i] | (pcm[i + 1] << 8)
        v = v - 65536 if v & 0x8000 else v
        if not high and v > threshold:
            high = True
            n += 1
        elif high and v < -threshold:
            high = False
    state[0], state[1] = n, high
    return n


def _size(path):
    try:
        return os.stat(path)[6]
    except OSError:
        return 0


async def _until_size(path, size, what):
    # Bounded: a stalled engine fails the test instead of hanging the suite.
    for _ in range(1000):
        if _size(path) >= size:
            return
        await asyncio.sleep_ms(10)
    raise AssertionError("%s: %s has %d bytes, expected %d" % (what, path, _size(path), size))


def _speaker(tag):
    path = t.tmpdir(tag) + "/spk.pcm"
    os.putenv("XZAUDIO_SPK", path)
    return path


def _mic_file(tag, frames):
    """XZAUDIO_MIC = frames x 60 ms of the tone at the engine rate."""
    path = t.tmpdir(tag) + "/mic.pcm"
    chunk = _sine(RATE * 60 // 1000, RATE)        # a whole number of periods
    with open(path, "wb") as f:
        for _ in range(frames):
            f.write(chunk)
    os.putenv("XZAUDIO_MIC", path)


async def test_mic_packets_played_back_by_the_speaker():
    # The board's whole loop: mic 24 kHz -> 16 kHz Opus packets -> speaker
    # decodes at 16 kHz -> 3:2 back to 24 kHz. No Encoder on the heap.
    if not _engine():
        return
    frames = 12
    _mic_file("loop", frames)
    path = _speaker("loop")
    out = audio.AudioOut(16000)
    out.set_volume(100)
    mic = audio.AudioIn(16000, 60)
    mic.start()
    buf = bytearray(audio._c.MAX_PACKET)
    for _ in range(frames):
        n = await mic.read_packet(buf)
        await out.play_wait(memoryview(buf)[:n])
    mic.stop()
    frame_bytes = RATE * 60 // 1000 * 2
    await _until_size(path, frames * frame_bytes, "speech")
    t.eq(_size(path), frames * frame_bytes, "every sample of every packet, at 24 kHz")
    # The first frame holds the resamplers' and codec's start-up.
    state = [0, False]
    with open(path, "rb") as f:
        f.read(frame_bytes)
        while True:
            chunk = f.read(2048)
            if not chunk:
                break
            _cycles(chunk, state=state)
    secs = (frames - 1) * 0.06
    t.true(abs(state[0] - TONE_HZ * secs) <= TONE_HZ * secs * 0.05,
           "the tone's pitch survives both ways: %d cycles in %.2f s" % (state[0], secs))
    t.eq(out.stats()[1], 0, "no packet dropped")


async def test_mic_packets_carry_the_tone_at_16_khz():
    if not _engine():
        return
    frames = 20                                   # 1.2 s
    _mic_file("mic", frames)
    mic = audio.AudioIn(16000, 60)
    mic.start()
    dec = audio.Decoder(16000)
    buf = bytearray(audio._c.MAX_PACKET)
    pcm = bytearray(960 * 2)
    state = [0, False]
    decoded = 0
    for i in range(frames):
        n = await mic.read_packet(buf)
        m = dec.decode(memoryview(buf)[:n], pcm)
        decoded += m
        # Frame 0 holds the resampler's and codec's start-up; after about a
        # second DTX takes a steady tone for background noise. Frames 1..12:
        if 1 <= i <= 12:
            _cycles(memoryview(pcm)[:m], state=state)
    mic.stop()
    t.eq(decoded, frames * 960 * 2, "%d frames of 60 ms at 16 kHz" % frames)
    secs = 12 * 0.06
    t.true(abs(state[0] - TONE_HZ * secs) <= TONE_HZ * secs * 0.05,
           "24 -> 16 kHz keeps the pitch: %d cycles in %.2f s" % (state[0], secs))


def _card(tag, copies=1, name="lesson.mp3"):
    """The test MP3, `copies` times end to end (an untagged CBR file's
    frames concatenate into one longer file), on a card folder mounted where
    only MicroPython sees it, as on the board. Returns its path there."""
    d = t.tmpdir(tag)
    with open(MP3, "rb") as src:
        data = src.read()
    with open(d + "/" + name, "wb") as f:
        for _ in range(copies):
            f.write(data)
    return t.mount_card(d) + "/" + name


def _played_ms(path):
    return _size(path) * 1000 // (2 * RATE)


async def test_mp3_plays_to_its_end_then_reports_it():
    if not _engine():
        return
    path = _speaker("mp3")
    audio.AudioOut(RATE)
    p = audio.Mp3Player()
    lesson = _card("mp3card")
    p.play(lesson)
    t.eq(await p.next_event(), audio.MP3_END, "natural end")
    t.eq(p.state(), audio._c.IDLE, "idle after the end")
    ms = _played_ms(path)
    t.true(abs(ms - audio.mp3_duration_ms(lesson)) <= 60, "played %d ms of a 1500 ms file" % ms)
    p.play(lesson)
    t.eq(await p.next_event(), audio.MP3_END, "a second pass of the same file")
    ms = _played_ms(path)
    t.true(abs(ms - 2 * audio.mp3_duration_ms(lesson)) <= 120, "played %d ms in two passes" % ms)


async def test_mp3_longer_than_the_feed_ring_plays_every_frame_across_a_pause():
    # 30 copies: 95 KB against the engine's 16 KB input ring, fed 2 KB at a
    # time, so the feeding task waits for room again and again (and all
    # through the pause) while the loop runs on.
    if not _engine():
        return
    path = _speaker("mp3long")
    audio.AudioOut(RATE)
    p = audio.Mp3Player()
    lesson = _card("mp3long", copies=30)
    p.play(lesson)
    p.pause()
    for _ in range(50):
        await asyncio.sleep_ms(0)
    t.eq(p.state(), audio._c.PAUSED, "still paused")
    p.resume()
    t.eq(await p.next_event(), audio.MP3_END, "natural end")
    ms, want = _played_ms(path), audio.mp3_duration_ms(lesson)
    t.true(abs(ms - want) <= 60, "played %d ms of a %d ms file" % (ms, want))


async def test_mp3_stop_pause_and_a_broken_file():
    if not _engine():
        return
    _speaker("mp3b")
    audio.AudioOut(RATE)
    p = audio.Mp3Player()
    p.play(_card("mp3b"))
    p.pause()
    t.eq(p.state(), audio._c.PAUSED, "paused")
    p.resume()
    p.stop()
    t.eq(await p.next_event(), audio.MP3_STOPPED, "a stop is not an end")
    d = t.tmpdir("bad")
    with open(d + "/bad.mp3", "wb") as f:
        f.write(b"not an mp3 at all" * 10)
    card = t.mount_card(d)
    p.play(card + "/bad.mp3")
    t.eq(await p.next_event(), audio.MP3_ERROR, "a file that is no MP3")
    p.play(card + "/gone.mp3")
    t.eq(await p.next_event(), audio.MP3_ERROR, "a file that is not there")
    t.eq(p.state(), audio._c.IDLE, "idle after the errors")
