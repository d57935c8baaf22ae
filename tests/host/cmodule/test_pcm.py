"""core/xz_pcm: what the board's I2S glue and the host engine both use to
turn the wire's samples into the engine's 16-bit mono (ES7210 TDM slots,
an INMP441's 32-bit slots, a MAX98357A's) and to interleave "MR" for the AFE."""
import ctypes

import numpy as np


def _p(a, t):
    return a.ctypes.data_as(ctypes.POINTER(t))


def test_take_slot_picks_one_slot_of_each_frame(core):
    frames = np.arange(4 * 6, dtype=np.int16).reshape(6, 4)     # 6 frames of 4 slots
    out = np.zeros(6, dtype=np.int16)
    for slot in range(4):
        core.lib.xz_pcm_take_slot(_p(frames, ctypes.c_int16), 6, 4, slot, _p(out, ctypes.c_int16))
        assert list(out) == list(frames[:, slot])


def test_from_i32_shifts_arithmetically_and_saturates(core):
    src = np.array([0, 1 << 12, -(1 << 12), 3000 << 12, 0x7FFFFFFF, -0x80000000, -(40000 << 12)], dtype=np.int32)
    out = np.zeros(len(src), dtype=np.int16)
    core.lib.xz_pcm_from_i32(_p(src, ctypes.c_int32), len(src), 12, _p(out, ctypes.c_int16))
    assert list(out) == [0, 1, -1, 3000, 32767, -32768, -32768]


def test_to_i32_puts_the_sample_in_the_top_half_and_interleave_pairs(core):
    src = np.array([0, 1, -1, 32767, -32768], dtype=np.int16)
    out = np.zeros(len(src), dtype=np.int32)
    core.lib.xz_pcm_to_i32(_p(src, ctypes.c_int16), len(src), _p(out, ctypes.c_int32))
    assert list(out) == [int(v) << 16 for v in src]
    a, b = np.array([1, 2, 3], dtype=np.int16), np.array([-1, -2, -3], dtype=np.int16)
    mr = np.zeros(6, dtype=np.int16)
    core.lib.xz_pcm_interleave2(_p(a, ctypes.c_int16), _p(b, ctypes.c_int16), 3, _p(mr, ctypes.c_int16))
    assert list(mr) == [1, -1, 2, -2, 3, -3]
