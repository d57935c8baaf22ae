"""Ring buffer, packet queue, frame assembler and resampler as their users
(I2S task, codec task, MicroPython side) observe them."""
import ctypes

import numpy as np
import pytest

from testkit import xzcore


def ring(core, cap):
    r = xzcore.Ring()
    store = ctypes.create_string_buffer(cap)
    rc = core.lib.xz_ring_init(ctypes.byref(r), store, cap)
    r._store = store  # keep the storage alive with the ring
    return rc, r


def read(core, r, n):
    buf = ctypes.create_string_buffer(max(n, 1))
    k = core.lib.xz_ring_read(ctypes.byref(r), buf, n)
    return buf.raw[:k]


def test_capacity_must_be_a_power_of_two(core):
    assert ring(core, 1000)[0] == -1
    assert ring(core, 1)[0] == -1
    assert ring(core, 1024)[0] == 0


def test_overflow_keeps_the_oldest_bytes_and_counts_the_rest(core):
    _, r = ring(core, 4096)
    data = bytes(i % 251 for i in range(5000))
    assert core.lib.xz_ring_write(ctypes.byref(r), data, 5000) == 4096
    assert r.dropped == 904
    assert core.lib.xz_ring_free(ctypes.byref(r)) == 0
    assert core.lib.xz_ring_write(ctypes.byref(r), b"x", 1) == 0
    assert r.dropped == 905
    assert read(core, r, 4096) == data[:4096]


def test_underflow_returns_what_is_there_and_counts(core):
    _, r = ring(core, 256)
    assert read(core, r, 100) == b""
    assert r.underruns == 1
    core.lib.xz_ring_write(ctypes.byref(r), b"abc", 3)
    assert read(core, r, 10) == b"abc"
    assert r.underruns == 2


def test_bytes_survive_many_wraps_in_order(core):
    _, r = ring(core, 64)
    sent = got = b""
    for i in range(200):
        chunk = bytes((i * 7 + j) % 256 for j in range(1 + i % 50))
        k = core.lib.xz_ring_write(ctypes.byref(r), chunk, len(chunk))
        sent += chunk[:k]
        got += read(core, r, 1 + (i * 13) % 60)
    got += read(core, r, 64)
    assert got == sent and len(sent) > 1000


def push(core, r, pkt):
    return core.lib.xz_pkt_push(ctypes.byref(r), pkt, len(pkt))


def pop(core, r, cap=2048):
    buf = ctypes.create_string_buffer(cap)
    n = core.lib.xz_pkt_pop(ctypes.byref(r), buf, cap)
    return buf.raw[:n] if n >= 0 else n


def test_full_packet_queue_drops_the_newest_packet_whole(core):
    # 40 frames of 60 ms is the device's decode queue; 64-byte packets here.
    _, r = ring(core, 4096)
    pkts = [bytes([i]) * 64 for i in range(70)]
    accepted = [push(core, r, p) == 0 for p in pkts]
    assert accepted.count(True) == 4096 // 66
    assert accepted.index(False) == 4096 // 66 and not any(accepted[4096 // 66:])
    assert r.dropped == 70 - 4096 // 66
    out = []
    while True:
        p = pop(core, r)
        if p == -1:
            break
        out.append(p)
    assert out == pkts[:4096 // 66]  # whole, in order, never torn


def test_packet_too_big_for_the_reader_stays_queued(core):
    _, r = ring(core, 1024)
    push(core, r, b"q" * 300)
    assert core.lib.xz_pkt_peek_len(ctypes.byref(r)) == 300
    assert pop(core, r, cap=100) == -2
    assert pop(core, r) == b"q" * 300
    assert pop(core, r) == -1 and r.underruns == 1


def test_framer_cuts_odd_dma_blocks_into_60ms_frames(core):
    n = core.lib.xz_frame_samples(16000, 60)
    assert n == 960 and core.lib.xz_frame_samples(44100, 60) == 2646
    assert core.lib.xz_frame_samples(11025, 10) == 0  # 110.25 samples
    f = xzcore.Framer()
    store = (ctypes.c_int16 * n)()
    core.lib.xz_framer_init(ctypes.byref(f), store, n)
    src = np.arange(10000, dtype=np.int16)
    frames, pos = [], 0
    while pos < len(src):
        block = src[pos:pos + 777]  # an I2S DMA block is not a frame
        off = 0
        while off < len(block):
            k = core.lib.xz_framer_feed(ctypes.byref(f), block[off:].ctypes.data, len(block) - off)
            off += k
            if core.lib.xz_framer_full(ctypes.byref(f)):
                frames.append(np.ctypeslib.as_array(store).copy())
                core.lib.xz_framer_take(ctypes.byref(f))
        pos += len(block)
    assert len(frames) == 10000 // 960
    assert np.array_equal(np.concatenate(frames), src[:len(frames) * 960])
    assert f.fill == 10000 % 960


def resample(core, up, down, x, block=960):
    r = xzcore.Resampler()
    assert core.lib.xz_rs_init(ctypes.byref(r), up, down) == 0
    out = []
    buf = (ctypes.c_int16 * (xzcore.RS_MAX_IN * 3 + 2))()
    for i in range(0, len(x), block):
        chunk = np.ascontiguousarray(x[i:i + block], dtype=np.int16)
        n = core.lib.xz_rs_process(ctypes.byref(r), chunk.tobytes(), len(chunk), buf, len(buf))
        assert n >= 0
        out.append(np.ctypeslib.as_array(buf)[:n].copy())
    return np.concatenate(out).astype(np.float64)


def tone(rate, hz, secs=1.0, amp=10000):
    t = np.arange(int(rate * secs)) / rate
    return (amp * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def level_db(x, rate, hz):
    """Level of one frequency (dB re. amplitude 1), skipping the filter's start-up."""
    x = x[len(x) // 10:]
    t = np.arange(len(x)) / rate
    return 20 * np.log10(2 * abs(np.dot(x, np.exp(-2j * np.pi * hz * t))) / len(x) + 1e-9)


@pytest.mark.parametrize("up,down,rin,rout", [(3, 2, 16000, 24000), (2, 3, 24000, 16000)])
def test_resampler_keeps_speech_band_tones(core, up, down, rin, rout):
    y = resample(core, up, down, tone(rin, 1000))
    assert abs(len(y) - rin * up // down) <= 1  # one second in, one second out
    assert abs(level_db(y, rout, 1000) - 20 * np.log10(10000)) < 0.5


def test_downsampling_does_not_fold_high_tones_back(core):
    # 10 kHz is above 16 kHz's Nyquist: it must vanish, not alias to 6 kHz.
    y = resample(core, 2, 3, tone(24000, 10000))
    assert level_db(y, 16000, 6000) < 20 * np.log10(10000) - 50


def test_resampler_refuses_oversized_calls(core):
    r = xzcore.Resampler()
    assert core.lib.xz_rs_init(ctypes.byref(r), 4, 1) == -1
    core.lib.xz_rs_init(ctypes.byref(r), 3, 2)
    src = bytes(2 * (xzcore.RS_MAX_IN + 1))
    out = (ctypes.c_int16 * 8000)()
    assert core.lib.xz_rs_process(ctypes.byref(r), src, xzcore.RS_MAX_IN + 1, out, 8000) == -1
    assert core.lib.xz_rs_process(ctypes.byref(r), src, 100, out, 10) == -1


def test_flushing_the_speaker_queue_skips_whole_packets(core):
    _, r = ring(core, 256)
    for p in (b"a" * 10, b"", b"c" * 30):
        push(core, r, p)
    assert [core.lib.xz_pkt_skip(ctypes.byref(r)) for _ in range(4)] == [10, 0, 30, -1]
    assert core.lib.xz_ring_used(ctypes.byref(r)) == 0
