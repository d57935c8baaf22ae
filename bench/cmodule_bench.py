"""Host figures for the C audio core: state sizes and CPU per 60 ms frame.

    .venv/bin/python bench/cmodule_bench.py

Prints figures only; nothing here is asserted. The board (ESP32-S3, 240 MHz,
fixed-point libopus) is slower than this host: these numbers bound the
core's own overhead and catch regressions, they are not board timings.
"""
import ctypes
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "firmware" / "lib"))
from testkit import xzcore  # noqa: E402
import mp3info  # noqa: E402


def speech(tmp, rate):
    wav, raw = tmp / "s.wav", tmp / ("s%d.raw" % rate)
    subprocess.run(["espeak-ng", "-w", str(wav), "Once upon a time a little fox found a red "
                    "kite in the garden and flew it all afternoon."], check=True)
    subprocess.run(["sox", str(wav), "-r", str(rate), "-c", "1", "-b", "16", "-e", "signed",
                    "-t", "raw", str(raw)], check=True)
    return raw.read_bytes()


def per_frame(fn, frames, repeat=3):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        for f in frames:
            fn(f)
        dt = (time.perf_counter() - t0) / len(frames)
        best = dt if best is None or dt < best else best
    return best


def main():
    xzcore.build()
    core = xzcore.load()
    lib = core.lib
    tmp = pathlib.Path(tempfile.mkdtemp())
    print("state sizes: encoder %d B, decoder %d B, resampler %d B"
          % (lib.xz_enc_size(), lib.xz_dec_size(), ctypes.sizeof(xzcore.Resampler)))
    for rate in (16000, 24000):
        pcm = speech(tmp, rate)
        n = rate * 60 // 1000
        frames = [pcm[i:i + 2 * n] for i in range(0, len(pcm) - 2 * n + 1, 2 * n)]
        enc, dec = core.encoder(rate, 60), core.decoder(rate)
        pkts = [enc.encode(f) for f in frames]
        te = per_frame(core.encoder(rate, 60).encode, frames)
        td = per_frame(dec.decode, pkts)
        kbps = sum(len(p) for p in pkts) * 8 / (len(frames) * 0.06) / 1000
        print("opus %5d Hz: encode %6.1f us/frame (%.2f %% of real time), decode %6.1f us/frame "
              "(%.2f %%), %.1f kbit/s VBR" % (rate, te * 1e6, te / 0.06 * 100, td * 1e6, td / 0.06 * 100, kbps))
    pcm24 = speech(tmp, 24000)
    r = xzcore.Resampler()
    lib.xz_rs_init(ctypes.byref(r), 2, 3)
    out = (ctypes.c_int16 * 4400)()
    blocks = [pcm24[i:i + 2880] for i in range(0, len(pcm24) - 2880 + 1, 2880)]
    tr = per_frame(lambda b: lib.xz_rs_process(ctypes.byref(r), b, 1440, out, 4400), blocks)
    print("resample 24->16 kHz: %.1f us per 60 ms (%.2f %% of real time)" % (tr * 1e6, tr / 0.06 * 100))
    wav = tmp / "long.wav"
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", str(wav), "synth", "300", "sine", "440"], check=True)
    mp3 = tmp / "long.mp3"
    subprocess.run(["lame", "--quiet", "-t", "-b", "128", str(wav), str(mp3)], check=True)
    data = mp3.read_bytes()
    t0 = time.perf_counter()
    info = core.mp3_info(data)
    tc = time.perf_counter() - t0
    t0 = time.perf_counter()
    py = mp3info.mp3_info(str(mp3))
    tp = time.perf_counter() - t0
    print("mp3 scan, 5 min 128 kbit/s CBR untagged (%d frames, %.1f MB): C %.1f ms, "
          "firmware Python (CPython) %.0f ms; durations %d / %d ms"
          % (info["frames"], len(data) / 1e6, tc * 1e3, tp * 1e3, info["duration_ms"], py["duration_ms"]))


if __name__ == "__main__":
    main()
