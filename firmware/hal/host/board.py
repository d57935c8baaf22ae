# The simulated board: every part of the HAL over one state directory,
# wired as a board profile says (firmware/boards/<name>.json; default the
# Sening profile).
#
#   b = board("/tmp/dev1", advance=120)     # 120 s passed while it was off
#   b = board("/tmp/dev2", profile="firmware/boards/esp32-s3-box-3.json")
#   b.wake_cause()  ->  "alarm" | "power_on" | "reset" | "button"
#
# State directory (kept between runs, like the board's flash and battery):
#   nvs.json     the NVS partition
#   rtc.json     DS3231 registers and the chip time when last saved
#   world.json   simulated wall time and host time when last saved
#   power.json   why the last run ended (standby / reset); read at boot
#   boot.json    what this boot decided (wake cause), for outside tools
#   mac          the Wi-Fi MAC (the device id)
#   sd/          the SD card, unless sd_dir names another directory
#   speaker/     one reply_NNNN.wav (+ reply_NNNN/ frames) per reply
import json

import asyncio

import log
from hal import errors
from hal.amp import Amp
from hal.sdfs import CardFS
from hal.host import fs
from hal.host.clock import HostClock, host_time
from hal.host.nvs import NVSFlash, DEFAULT_SIZE
from hal.host.i2c import I2CBus
from hal.host.ds3231_model import DS3231Model, ADDR as RTC_ADDR
from hal.host.pins import Button, RtcIntPin
from hal.host.power import HostPower, read_record, resolve_wake_cause
from hal.host.wifi import HostWifi
from hal.host.audio import HostMic, HostSpeaker
from hal.host.frontend import HostFrontend
from hal.host.voice import HostVoice

BUTTONS = ("boot", "vol_up", "vol_down")
DEFAULT_PROFILE = "sening"
_log = log.get("board")


def profile_path(name):
    """firmware/boards/<name>.json of this firmware tree: next to the hal
    package when it runs from source, else under the working folder (a
    frozen build's modules have no folder of their own)."""
    from hal import profile as profiles
    f = getattr(profiles, "__file__", "") or ""
    if f.endswith("hal/profile.py"):
        path = "%sboards/%s.json" % (f[:-len("hal/profile.py")], name)
        if fs.exists(path):
            return path
    return "firmware/boards/%s.json" % name


def _profile(p):
    # Imported here, and forgotten after the boot (app/heap.py AFTER_BOOT):
    # the checks run once, and from source they hold 7.5 KB of the heap.
    from hal import profile as profiles
    if p is None:
        p = profile_path(DEFAULT_PROFILE)
    if isinstance(p, str):
        return profiles.load(p if p.endswith(".json") else profile_path(p))
    return profiles.validate(p)


class HostBoard:
    name = "host"
    # SD MP3 passes last the file's duration on this board's simulated
    # clock (app/player/mp3_backend.py), not in xzaudio's real-time decoder.
    mp3_on_clock = True

    def __init__(self, state_dir, sd_dir=None, advance=0, speed=1, wake=None,
                 exit_fn=None, nvs_size=DEFAULT_SIZE, wifi_reachable=True,
                 profile=None, hardware=None):
        self.profile = _profile(profile)
        self.board_name = self.profile["name"]
        fs.makedirs(state_dir)
        self.state_dir = state_dir
        self._world_path = fs.join(state_dir, "world.json")
        self._rtc_path = fs.join(state_dir, "rtc.json")

        # Time that passed while off: host time since the last save + advance.
        world = fs.read_json(self._world_path)
        now = host_time()
        if world:
            boot_wall = world["sim_wall"] + max(0, now - world["host"]) + int(advance)
        else:
            boot_wall = now + int(advance)
        self.clock = HostClock(wall=boot_wall, speed=speed)

        self.rtc_model = DS3231Model(self.clock)
        rtc = fs.read_json(self._rtc_path)
        if rtc and world:
            self.rtc_model.load(rtc, boot_wall - world["sim_wall"])
        elif rtc:
            self.rtc_model.load(rtc, 0)
        self.i2c = I2CBus()
        self.i2c.attach(RTC_ADDR, self.rtc_model)
        self.rtc_int = RtcIntPin(self.rtc_model)
        self.frontend = HostFrontend(self.i2c, self.profile,
                                     _profile(hardware) if hardware is not None else None)
        self.clock.on_warp(self.rtc_model.update)

        self.nvs_flash = NVSFlash(fs.join(state_dir, "nvs.json"), nvs_size)
        self.sd = CardFS(sd_dir or fs.join(state_dir, "sd"))
        fs.makedirs(self.sd.root)
        self.buttons = {}
        for n in BUTTONS:
            self.buttons[n] = Button(n)
        self.wifi = HostWifi(state_dir, self.clock, wifi_reachable)
        self.mic = HostMic(self.clock, path=self.frontend)
        self.amp = Amp(self.frontend.output, self.clock)   # I2S runs from boot on: always clocked
        self.speaker = HostSpeaker(self.clock, fs.join(state_dir, "speaker"), path=self.frontend,
                                   amp=self.amp)
        self.voice = HostVoice()

        record = read_record(state_dir)
        cause = resolve_wake_cause(record, self.rtc_int.value() == 0, wake)
        fs.remove_if_exists(fs.join(state_dir, "power.json"))
        fs.write_atomic(fs.join(state_dir, "boot.json"), json.dumps(
            {"wake_cause": cause, "previous": record, "wall": boot_wall}).encode())
        self.power = HostPower(state_dir, self.clock, cause, self.save_state, exit_fn,
                               before_sleep=self._before_sleep)
        self.rtc_model.on_write = self.save_state  # battery-backed: survives a power cut
        self.save_state()
        self.frontend.start_i2s()   # MCLK first: the codecs run on it
        self._open_codecs()         # the amplifier stays off until something plays (self.amp)
        self._ticker = None

    def _open_codecs(self):
        """Codec bring-up at boot, as on the board: a chip that does not
        answer stops the boot with one line naming chip, address and bus."""
        try:
            self.frontend.open()
        except OSError as e:
            _log.error("codec: %s (board profile %s)", e, self.board_name)
            raise
        self.speaker.set_volume(self.speaker.volume)
        _log.info("codec: %s front end up (%s I2S, speaker %d Hz, mic %d Hz)", self.board_name,
                  self.frontend.mode, self.frontend.rate, self.frontend.mic_rate)

    def _before_sleep(self, cause):
        self.amp.shut()
        self.frontend.power_down()

    def nvs(self, namespace):
        """An esp32.NVS-like handle on one namespace."""
        return self.nvs_flash.open(namespace)

    def wake_cause(self):
        return self.power.wake_cause()

    def save_state(self):
        """Persist the battery-backed parts (RTC chip, simulated wall time)."""
        if self.nvs_flash.dead:
            return  # power is cut: nothing reaches storage any more
        fs.write_atomic(self._rtc_path, json.dumps(self.rtc_model.to_state()).encode())
        fs.write_atomic(self._world_path, json.dumps(
            {"sim_wall": self.clock.time(), "host": host_time()}).encode())

    def power_cut(self):
        """Simulate pulling the plug: storage is frozen from now on."""
        self.nvs_flash.die_after(0)
        self.nvs_flash.dead = True
        raise errors.PowerCut("power cut")

    def start(self):
        """Start the background task that lets the RTC raise INT on time."""
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick())
        return self._ticker

    def stop(self):
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self.save_state()

    async def _tick(self):
        while True:
            wait = self.rtc_model.seconds_to_next_alarm(horizon=2)
            await self.clock.sleep_ms(1000 if wait is None else max(1, wait) * 1000)
            self.rtc_model.update()


def board(state_dir="/tmp/xiaozhi-sim", **opts):
    return HostBoard(state_dir, **opts)
