"""The three I2S wirings of xzaudio.start(), on the unix port's host
engine: the mic file carries what each board's I2S RX line carries (ES7210
TDM slots, an INMP441's 32-bit slots), goes through the board's own slot
picking and conversion (core/xz_pcm), the mic path and Opus, and comes out
as the tone that was put in the mic's slot. The speech stand-in listens
while the device speaks only when the wiring has a playback reference
(echo cancellation), as esp-sr is set up on the board. One interpreter per
wiring: the engine starts once per process."""
import json
import subprocess

import numpy as np
import pytest

from testkit import MICROPYTHON_BUILD, ROOT, firmware_env

PROBE = ROOT / "tests" / "host" / "cmodule" / "mode_probe.py"
WAKE_INFO = "wakenet9l_tts1h8_你好小智_3_0.631_0.635"
FRAMES = 12  # mode_probe.FRAMES, 60 ms each

pytestmark = pytest.mark.skipif(not MICROPYTHON_BUILD.exists(),
                                reason="needs the unix port with xzaudio (make micropython)")


def tone(hz, rate, seconds, amp):
    t = np.arange(int(rate * seconds)) / rate
    return amp * np.sin(2 * np.pi * hz * t)


def dominant_hz(pcm, rate=16000):
    x = pcm[960:].astype(np.float64)          # the first frame holds the codec's start-up
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return np.fft.rfftfreq(len(x), 1 / rate)[int(np.argmax(spec))]


def run(tmp_path, wiring, mic_bytes):
    (tmp_path / "mic.raw").write_bytes(mic_bytes)
    models = tmp_path / "models" / "wn9_nihaoxiaozhi_tts"
    models.mkdir(parents=True)
    (models / "_MODEL_INFO_").write_text(WAKE_INFO + "\n")
    (tmp_path / "said.txt").write_text("")
    env = firmware_env({"XZAUDIO_MIC": str(tmp_path / "mic.raw"), "XZAUDIO_SPK": str(tmp_path / "spk.raw"),
                        "XZAUDIO_SR_MODELS": str(tmp_path / "models"),
                        "XZAUDIO_SPEECH": str(tmp_path / "said.txt")})
    p = subprocess.run([str(MICROPYTHON_BUILD), "-X", "heapsize=256K", str(PROBE), json.dumps(wiring),
                        str(tmp_path / "out.raw")], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    pcm = np.frombuffer((tmp_path / "out.raw").read_bytes(), dtype="<i2")
    assert len(pcm) == FRAMES * 960, "every 60 ms packet decoded"
    return res, pcm


def test_tdm_takes_the_mic_slot_and_hears_through_its_own_voice(tmp_path):
    # ES7210 on 4 slots at 24 kHz: another mic on slot 0, ours on slot 1,
    # nothing on 2, the DAC's echo reference on 3 (the stock boards' order).
    secs = FRAMES * 0.06 + 0.2
    slots = np.stack([tone(1000, 24000, secs, 6000), tone(400, 24000, secs, 6000),
                      np.zeros(int(24000 * secs)), tone(700, 24000, secs, 6000)], axis=1)
    wiring = {"mode": 1, "rate": 24000, "tdm_slots": 4, "mic_slot": 1, "ref_slot": 3}
    res, pcm = run(tmp_path, wiring, slots.astype("<i2").tobytes())
    assert abs(dominant_hz(pcm) - 400) < 20, "the mic slot's tone, at 16 kHz"
    assert res["aec"] is True
    assert res["heard_while_speaking"] is True, "with a reference the wake word cuts in"


def test_tdm_without_a_reference_does_not_hear_while_speaking(tmp_path):
    secs = FRAMES * 0.06 + 0.2
    slots = np.stack([tone(400, 24000, secs, 6000), tone(1000, 24000, secs, 6000)], axis=1)
    res, pcm = run(tmp_path, {"mode": 1, "tdm_slots": 2, "mic_slot": 0}, slots.astype("<i2").tobytes())
    assert abs(dominant_hz(pcm) - 400) < 20
    assert res["aec"] is False
    assert res["heard_while_speaking"] is False


def test_simplex_reads_32_bit_slots_at_its_own_rate(tmp_path):
    # bread-compact: INMP441 at 16 kHz in (24-bit samples in 32-bit slots),
    # MAX98357A at 24 kHz out. The tone's 16-bit level is what the stock
    # firmware reads: the slot shifted right by 12.
    level = 3000
    mic = (tone(400, 16000, FRAMES * 0.06 + 0.2, level) * 4096).astype("<i4")
    wiring = {"mode": 2, "rate": 24000, "mic_rate": 16000, "bclk": 15, "ws": 16, "dout": 7,
              "mic_bclk": 5, "mic_ws": 4, "din": 6, "mclk": -1}
    res, pcm = run(tmp_path, wiring, mic.tobytes())
    assert abs(dominant_hz(pcm) - 400) < 20
    rms = np.sqrt(np.mean(pcm[960:].astype(np.float64) ** 2))
    assert 0.7 < rms / (level / np.sqrt(2)) < 1.3, "level after the shift: rms %.0f" % rms
    assert res["aec"] is False and res["heard_while_speaking"] is False


BAD = [
    ({"mode": 3}, "mode is MODE_DUPLEX, MODE_TDM or MODE_SIMPLEX"),
    ({"mic_rate": 16000}, "one controller"),
    ({"mode": 1, "mic_slot": 1, "ref_slot": 1}, "ref_slot is -1 or another"),
    ({"mode": 1, "tdm_slots": 9}, "tdm_slots is 2..8"),
    ({"mode": 2}, "MODE_SIMPLEX needs mic_bclk and mic_ws"),
    ({"rate": 44100}, "rate is 16000, 24000 or 48000"),
]


def test_wirings_the_engine_cannot_run_are_refused_with_the_reason():
    script = ("import xzaudio, json, sys\n"
              "for kw in json.loads(sys.argv[1]):\n"
              "    try:\n"
              "        xzaudio.start(**kw); print('started')\n"
              "    except ValueError as e:\n"
              "        print(e)\n"
              "print(xzaudio.running(), xzaudio.MODE_DUPLEX, xzaudio.MODE_TDM, xzaudio.MODE_SIMPLEX)\n")
    p = subprocess.run([str(MICROPYTHON_BUILD), "-c", script, json.dumps([k for k, _ in BAD])], cwd=ROOT,
                       env=firmware_env(), capture_output=True, text=True, timeout=60)
    lines = p.stdout.strip().splitlines()
    assert len(lines) == len(BAD) + 1, p.stdout + p.stderr
    for line, (_, want) in zip(lines, BAD):
        assert line.startswith("xzaudio.start: ") and want in line, (line, want)
    assert lines[-1] == "False 0 1 2", "nothing started; the mode constants"
