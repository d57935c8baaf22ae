"""The ESP32 HAL's board (firmware/hal/esp32/board.py) built from each
profile under CPython. What cannot run here, the chip's `machine`,
`esp32` and `network` modules and the `xzaudio` engine, is replaced by
small recorders; the I2C bus behind `machine.I2C` is the host bus with
the register models, so the board's real codec drivers run against them.
Checked: the pins the board claims, the codec bring-up at boot, the
engine started with the profile's mode and pins, and the power-down
before deep sleep."""
import asyncio
import json
import sys
import types

import pytest

from simkit import use_host_hal

use_host_hal()
from hal.host.i2c import I2CBus  # noqa: E402
from hal.host.frontend import HostFrontend  # noqa: E402
from testkit import ROOT  # noqa: E402

BOARDS = ("sening", "esp32-s3-box-3", "bread-compact")


class Pin:
    IN, OUT, PULL_UP, IRQ_FALLING = 1, 3, 2, 2
    claimed = []

    def __init__(self, gpio, mode=None, pull=None):
        self.gpio, self.mode, self.level = gpio, mode, None
        Pin.claimed.append((gpio, mode))

    def value(self, v=None):
        if v is None:
            return 1 if self.level is None else self.level
        self.level = v
        Pin.out[self.gpio] = v
        line = Pin.wired.get(self.gpio)
        if line is not None:   # the board's amplifier enable line
            line.value(v)

    def irq(self, handler=None, trigger=0):
        pass


def fake_modules(monkeypatch, bus, calls, models=None):
    machine = types.ModuleType("machine")
    Pin.claimed, Pin.out, Pin.wired = [], {}, {}
    if models is not None and models.amp_pin is not None:
        Pin.wired[models.amp_pin.gpio] = models.amp_pin
    machine.Pin = Pin
    machine.I2C = lambda n, scl, sda, freq: calls.append(("i2c", n, scl.gpio, sda.gpio, freq)) or bus
    machine.SDCard = lambda **kw: calls.append(("sdcard", kw["width"], kw["sck"].gpio)) or object()
    machine.RTC = lambda: None
    machine.reset_cause = lambda: 1
    machine.PWRON_RESET, machine.DEEPSLEEP_RESET = 1, 4
    machine.deepsleep = lambda: calls.append(("deepsleep",))
    esp32 = types.ModuleType("esp32")
    esp32.WAKEUP_ALL_LOW = 0
    esp32.wake_on_ext0 = lambda pin, level: calls.append(("ext0", pin.gpio))
    network = types.ModuleType("network")
    network.STA_IF = 0
    network.WLAN = lambda i: types.SimpleNamespace(disconnect=lambda: None, active=lambda *a: None)
    xzaudio = types.ModuleType("xzaudio")
    def start(**kw):   # the engine's I2S: MCLK reaches the codec models from here on
        calls.append(("xzaudio.start", kw))
        if models is not None:
            models.start_i2s(kw["rate"])
    xzaudio.start = start
    for name, mod in (("machine", machine), ("esp32", esp32), ("network", network), ("xzaudio", xzaudio)):
        monkeypatch.setitem(sys.modules, name, mod)
    import audio

    class Stream:   # the engine's streams (xzaudio AudioIn/AudioOut)
        def __init__(self, *a):
            self.volume = None

        def set_volume(self, v):
            self.volume = v
            calls.append(("engine volume", v))

        def stop(self):
            calls.append(("mic stop",))

        async def play_wait(self, frame):
            calls.append(("play", len(frame)))
    monkeypatch.setattr(audio, "AudioOut", Stream, raising=False)
    monkeypatch.setattr(audio, "AudioIn", Stream, raising=False)
    import time
    monkeypatch.setattr(time, "ticks_ms", lambda: 0, raising=False)
    monkeypatch.setattr(time, "ticks_diff", lambda a, b: a - b, raising=False)
    monkeypatch.setattr(time, "ticks_add", lambda a, b: a + b, raising=False)
    import os
    monkeypatch.setattr(os, "mount", lambda card, path: calls.append(("mount", path)), raising=False)
    for name in [m for m in sys.modules if m.startswith("hal.esp32")]:
        monkeypatch.delitem(sys.modules, name)


def profile(name):
    return json.loads((ROOT / "firmware" / "boards" / ("%s.json" % name)).read_text())


@pytest.mark.parametrize("name", BOARDS)
def test_esp32_board_from_each_profile(name, monkeypatch):
    p = profile(name)
    bus = I2CBus()
    models = HostFrontend(bus, p)   # the chips the board carries, on its bus
    calls = []
    fake_modules(monkeypatch, bus, calls, models)
    from hal.esp32.board import Esp32Board
    b = Esp32Board(profile=p, mount_sd=True)
    # esp_codec_dev drives its codecs at 100 kHz (audio_codec_ctrl_i2c.c)
    freq = 100000 if p["codecs"] else 400000
    assert ("i2c", 0, p["i2c"]["scl"], p["i2c"]["sda"], freq) in calls
    buttons = {g for g in p["buttons"].values() if g is not None}
    assert buttons <= {g for g, mode in Pin.claimed if mode == Pin.IN}
    wired = buttons | set(p["i2c"].values()) | set((p["sd"] or {}).values()) | {p["rtc_int"]}
    if p["amp"] and p["amp"]["kind"] == "gpio":
        wired.add(p["amp"]["pin"])
    assert {g for g, _ in Pin.claimed} <= wired   # no pin outside the profile is touched
    from hal import profile as profiles
    starts = [c[1] for c in calls if c[0] == "xzaudio.start"]
    if p["codecs"]:   # set up at boot, on the engine's MCLK; the volume comes with the speaker
        assert starts == [profiles.engine_args(p)]   # before the first codec register
        assert [m.refused for m in models.models.values()] == [[]] * len(models.models)
        assert models.speaker_fault() == "es8311: DAC volume at its floor (REG32=0x00)"
        assert not models.amp_on()   # the output path is not open yet
    # the first audio object starts the engine (if not yet) with the profile's wiring, once
    b.speaker, b.mic
    starts = [c[1] for c in calls if c[0] == "xzaudio.start"]
    assert starts == [profiles.engine_args(p)]
    assert models.mic_fault() is None
    if p["amp"]:   # off until something plays (hal/amp.py), then on before the first frame
        assert models.speaker_fault() == "amplifier off"
    asyncio.run(b.speaker.write_frame(b"\xf8\xff\xfe"))
    assert calls[-1] == ("play", 3) and models.speaker_fault() is None
    assert models.amp_unclocked() == 0
    b.speaker.set_volume(40)
    if p["codecs"]:   # the codec sets the volume, the engine plays at full scale
        assert models.dac.regs[0x32] == 98 + 40 and calls[-1] == ("engine volume", 100)
    else:
        assert calls[-1] == ("engine volume", 40)
    assert ("sdcard", 1, p["sd"]["clk"]) in calls if p["sd"] else not [c for c in calls if c[0] == "sdcard"]
    b.power.standby("power_off")
    assert calls[-1] == ("deepsleep",)
    assert (("ext0", p["rtc_int"]) in calls) == (p["rtc_int"] is not None)
    if p["codecs"]:
        assert models.speaker_fault() is not None
        assert models.dac.powered_down() and models.adc.powered_down()


def test_esp32_board_with_a_wrong_codec_address_stops_at_boot(monkeypatch, capsys):
    p = profile("esp32-s3-box-3")
    bus = I2CBus()
    HostFrontend(bus, p)
    wrong = profile("esp32-s3-box-3")
    wrong["codecs"][0]["addr"] = 0x11
    fake_modules(monkeypatch, bus, [])
    from hal.esp32.board import Esp32Board
    with pytest.raises(OSError, match=r"es8311 at 0x11 on I2C0 \(SDA GPIO8, SCL GPIO18\): no answer"):
        Esp32Board(profile=wrong)
    assert "board: codec: es8311 at 0x11 on I2C0" in capsys.readouterr().out
