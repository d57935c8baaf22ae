# A board's audio front end: its codec chips and amplifier switch, set up
# over the HAL's I2C (the bus the DS3231 shares) from the board profile
# (hal/profile.py). Each chip kind has the same small interface, as
# Espressif's esp_codec_dev has: open(), set_rate(rate), enable(on),
# set_volume(0..100), mute(on), set_mic_gain(db), power_down().
#
#   fe = Frontend(i2c, profile, "I2C0", make_pin)   # make_pin(gpio) -> .value(v)
#   fe.open()              # at boot, once I2S runs (MCLK): a chip that does
#                          # not answer raises CodecError
#   fe.output(True)        # the speaker path is open: amplifier on
#   fe.set_volume(70); fe.power_down()   # before standby
#
# Order, as stock xiaozhi-esp32 (box_audio_codec.cc, lichuang_dev_board.cc):
# I2S channels (MCLK) first, then the codec registers, the amplifier last,
# when the output opens, and first off.
#
# Boards without a codec (I2S mic + I2S amplifier) have only the amplifier
# switch, if any. docs/hardware.md says which register sequences were
# checked against what.
from codec.chip import CodecError  # noqa: F401


class Frontend:
    def __init__(self, i2c, profile, bus, make_pin):
        self.dac = self.adc = self.amp = None
        self._rate = profile["audio"]["rate"]
        self._mic_rate = profile["audio"]["mic_rate"]
        self._gain = None
        audio = profile["audio"]
        for cd in profile["codecs"]:
            if cd["chip"] == "es8311":
                from codec.es8311 import ES8311
                chip = ES8311(i2c, cd["addr"], bus, cd["role"])
            else:
                from codec.es7210 import ES7210, SLOT_MIC
                ref = audio.get("ref_slot", -1) if audio["mode"] == "tdm" else -1
                chip = ES7210(i2c, cd["addr"], bus, cd["mics"],
                              SLOT_MIC[ref] if ref >= 0 else None, cd.get("ref_gain_db", 0))
            if cd["role"] in ("dac", "both"):
                self.dac = chip
            if cd["role"] in ("adc", "both"):
                self.adc = chip
                self._gain = cd.get("mic_gain_db")
        amp = profile.get("amp")
        if amp and amp["kind"] == "pca9557":
            from codec.pca9557 import PCA9557Switch
            self.amp = PCA9557Switch(i2c, amp["addr"], bus, amp["pin"], amp["active"],
                                     amp.get("hold", ()))
        elif amp:
            self.amp = GpioSwitch(make_pin(amp["pin"]), amp["active"])

    @property
    def hw_volume(self):
        """True when a codec sets the speaker volume (the engine then plays
        at full scale); False: the engine scales the samples itself."""
        return self.dac is not None

    def _chips(self):
        out = []
        for c in (self.dac, self.adc):
            if c is not None and c not in out:
                out.append(c)
        return out

    def open(self):
        """Bring the front end up (I2S must already run: the codecs are
        clocked from its MCLK): every chip found, set to the profile's
        rates, its paths enabled; the amplifier stays off until output()."""
        if self.amp is not None:
            self.amp.open()
        for c in self._chips():
            c.open()
        if self.dac is not None:
            self.dac.set_rate(self._rate)
        if self.adc is not None and self.adc is not self.dac:
            self.adc.set_rate(self._mic_rate)
        if self._gain is not None:
            self.adc.set_mic_gain(self._gain)
        for c in self._chips():
            c.enable(True)

    def output(self, on):
        """The speaker path opens (on) or closes: the amplifier follows, so
        it never amplifies an unclocked DAC's start-up pop."""
        if self.amp is not None:
            self.amp.enable(on)

    def set_volume(self, volume):
        if self.dac is not None:
            self.dac.set_volume(volume)

    def mute(self, on):
        if self.dac is not None:
            self.dac.mute(on)

    def set_mic_gain(self, db):
        if self.adc is not None:
            self.adc.set_mic_gain(db)

    def power_down(self):
        """Amplifier off first (no pop), then every chip to its lowest power."""
        if self.amp is not None:
            self.amp.enable(False)
        for c in self._chips():
            c.power_down()


class GpioSwitch:
    """An amplifier enable line on a GPIO (e.g. the BOX-3's PA_CTRL, a
    MAX98357A's SD_MODE): active is the level that turns it on."""

    def __init__(self, pin, active):
        self._pin = pin
        self._active = active

    def open(self):
        self._pin.value(1 - self._active)

    def enable(self, on):
        self._pin.value(self._active if on else 1 - self._active)
