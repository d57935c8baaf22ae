# The Sening ESP32-S3 board: every HAL part built from machine/esp32/network.
#
# PINS are the GPIO numbers the board wiring uses; keep them in one place so
# docs/hardware.md and this table can be compared line by line. None is
# checked against the Sening schematic yet (docs/hardware.md). The DS3231
# INT line must sit on an RTC-capable GPIO (0..21 on the S3) to wake the
# chip from deep sleep.
import os

import asyncio
import esp32
import machine
from machine import Pin

from hal.sdfs import CardFS
from hal.esp32.clock import Clock
from hal.esp32.power import Power
from hal.esp32.voice import Voice
from hal.esp32.wifi import Wifi

PINS = {
    "i2c_scl": 2, "i2c_sda": 1, "rtc_int": 3,
    "sd_clk": 47, "sd_cmd": 48, "sd_d0": 21,
    "btn_boot": 0, "btn_vol_up": 40, "btn_vol_down": 39,
}
SD_MOUNT = "/sd"


class Esp32Board:
    name = "esp32"

    def __init__(self, pins=None, mount_sd=True):
        p = dict(PINS)
        p.update(pins or {})
        self.pins = p
        self.clock = Clock()
        self.i2c = machine.I2C(0, scl=Pin(p["i2c_scl"]), sda=Pin(p["i2c_sda"]), freq=400000)
        # open drain, active low, pulled up: idle 1, alarm 0
        self.rtc_int = Pin(p["rtc_int"], Pin.IN, Pin.PULL_UP)
        self.buttons = {
            "boot": Pin(p["btn_boot"], Pin.IN, Pin.PULL_UP),
            "vol_up": Pin(p["btn_vol_up"], Pin.IN, Pin.PULL_UP),
            "vol_down": Pin(p["btn_vol_down"], Pin.IN, Pin.PULL_UP),
        }
        self.sd = CardFS(SD_MOUNT)
        if mount_sd:
            self._mount_sd()
        self.wifi = Wifi()
        self.power = Power(self.rtc_int, self._before_sleep)
        self.voice = Voice()
        self._mic = self._speaker = None

    def _mount_sd(self):
        try:
            os.stat(SD_MOUNT)
            return  # already mounted (soft reset)
        except OSError:
            pass
        p = self.pins
        card = machine.SDCard(slot=1, width=1, sck=Pin(p["sd_clk"]),
                              cmd=Pin(p["sd_cmd"]), data=(Pin(p["sd_d0"]),))
        os.mount(card, SD_MOUNT)

    # Audio objects start the C engine: build them only when first used.
    @property
    def mic(self):
        if self._mic is None:
            from hal.esp32.audio import Mic
            self._mic = Mic()
        return self._mic

    @property
    def speaker(self):
        if self._speaker is None:
            from hal.esp32.audio import Speaker
            self._speaker = Speaker()
        return self._speaker

    def nvs(self, namespace):
        return esp32.NVS(namespace)

    def wake_cause(self):
        return self.power.wake_cause()

    def _before_sleep(self, cause):
        if self._mic is not None:
            self._mic.stop()
        self.voice.enable(False)
        self.wifi.disconnect()

    def start(self):
        return None  # the real DS3231 needs no simulation task

    def stop(self):
        pass

    def save_state(self):
        pass  # NVS and the DS3231 persist by themselves


def board(**opts):
    return Esp32Board(**opts)
