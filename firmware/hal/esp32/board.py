# An ESP32-S3 board, built from its board profile (hal/profile.py: the
# profile frozen into the image by `tools/flash.py --board NAME`, or one
# given): I2C, the DS3231's INT line, buttons, SD card, the codec chips and
# amplifier (lib/codec), and the C audio engine in the profile's I2S mode.
# docs/hardware.md lists each profile's pins and what of them is verified.
# The DS3231 INT line must sit on an RTC-capable GPIO (0..21 on the S3) to
# wake the chip from deep sleep; the profile check refuses any other.
import os

import esp32
import machine
from machine import Pin

import log
from hal import profile as profiles
from hal.amp import Amp
from hal.sdfs import CardFS
from hal.esp32.clock import Clock
from hal.esp32.power import Power
from hal.esp32.voice import Voice
from hal.esp32.wifi import Wifi

SD_MOUNT = "/sd"
_log = log.get("board")


class NoLine:
    """The DS3231 INT line of a profile that has none (rtc_int null): reads
    idle and never interrupts; such a board wakes from standby only by reset."""
    IRQ_FALLING = Pin.IRQ_FALLING

    def value(self):
        return 1

    def irq(self, handler=None, trigger=0):
        pass


class Esp32Board:
    name = "esp32"

    def __init__(self, profile=None, mount_sd=True):
        p = profiles.validate(profile) if profile is not None else profiles.frozen()
        self.profile = p
        self.board_name = p["name"]
        self.clock = Clock()
        i2c = p["i2c"]
        self.i2c = machine.I2C(0, scl=Pin(i2c["scl"]), sda=Pin(i2c["sda"]), freq=i2c["freq"])
        # open drain, active low, pulled up: idle 1, alarm 0
        self.rtc_int = Pin(p["rtc_int"], Pin.IN, Pin.PULL_UP) if p["rtc_int"] is not None else NoLine()
        self.buttons = {}
        for name, gpio in p["buttons"].items():
            if gpio is not None:
                self.buttons[name] = Pin(gpio, Pin.IN, Pin.PULL_UP)
        self.sd = CardFS(SD_MOUNT)
        if mount_sd and p["sd"] is not None:
            self._mount_sd(p["sd"])
        self.wifi = Wifi()
        self.power = Power(self.rtc_int if p["rtc_int"] is not None else None, self._before_sleep)
        self.voice = Voice()
        from codec import Frontend
        self.frontend = Frontend(self.i2c, p, "I2C0 (SDA GPIO%d, SCL GPIO%d)" % (i2c["sda"], i2c["scl"]),
                                 lambda gpio: Pin(gpio, Pin.OUT))
        self._mic = self._speaker = None
        self.amp = Amp(self._amp_switch, self.clock)
        self._open_codecs()

    def _open_codecs(self):
        """Codec bring-up at boot: a chip that does not answer stops the boot
        with one line naming chip, address and bus (not a silent board).
        The engine starts first: its I2S drives MCLK, which the codecs run
        on (stock starts I2S before any codec register is written)."""
        if self.profile["codecs"]:
            from hal.esp32.audio import start_engine
            start_engine(self.profile)
        try:
            self.frontend.open()
        except OSError as e:
            _log.error("codec: %s (board profile %s)", e, self.board_name)
            raise
        _log.info("codec: %s front end up", self.board_name)

    def _mount_sd(self, sd):
        try:
            os.stat(SD_MOUNT)
            return  # already mounted (soft reset)
        except OSError:
            pass
        data = [Pin(sd["d0"])]
        if sd["width"] == 4:
            data += [Pin(sd["d1"]), Pin(sd["d2"]), Pin(sd["d3"])]
        card = machine.SDCard(slot=1, width=sd["width"], sck=Pin(sd["clk"]),
                              cmd=Pin(sd["cmd"]), data=tuple(data))
        os.mount(card, SD_MOUNT)

    # Audio objects start the C engine: build them only when first used.
    @property
    def mic(self):
        if self._mic is None:
            from hal.esp32.audio import Mic, start_engine
            start_engine(self.profile)
            self._mic = Mic()
        return self._mic

    @property
    def speaker(self):
        if self._speaker is None:
            from hal.esp32.audio import Speaker, start_engine
            start_engine(self.profile)
            self._speaker = Speaker(frontend=self.frontend, amp=self.amp)
        return self._speaker

    def _amp_switch(self, on):
        """The amplifier's enable line (self.amp decides when): the engine's
        I2S clocks the DAC before it is amplified; a board without codecs
        starts the engine only with its first audio object."""
        if on:
            from hal.esp32.audio import start_engine
            start_engine(self.profile)
        self.frontend.output(on)

    def nvs(self, namespace):
        return esp32.NVS(namespace)

    def wake_cause(self):
        return self.power.wake_cause()

    def _before_sleep(self, cause):
        if self._mic is not None:
            self._mic.stop()
        self.voice.enable(False)
        self.amp.shut()
        self.frontend.power_down()   # amplifier off, codecs to their lowest power
        self.wifi.disconnect()

    def start(self):
        return None  # the real DS3231 needs no simulation task

    def stop(self):
        pass

    def save_state(self):
        pass  # NVS and the DS3231 persist by themselves


def board(**opts):
    return Esp32Board(**opts)
