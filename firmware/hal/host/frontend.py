# The simulated board's audio front end: the register models of the
# profile's chips on the host I2C bus, the amplifier's enable line, and the
# firmware's own codec drivers (firmware/lib/codec) run against them at
# boot. The host speaker and mic ask speaker_fault() / mic_fault() before
# every frame: audio flows only once the models' registers say the path is
# powered, clocked and unmuted, so a missing or wrong init is heard (or
# rather not) in the tests. The I2S controller is modelled too
# (i2s_model.py): the codecs take register writes only while its MCLK runs,
# and the mic side hears only when its frame lines up with TX's.
from hal.host.es8311_model import ES8311Model
from hal.host.es7210_model import ES7210Model
from hal.host.pca9557_model import PCA9557Model
from hal.host.i2s_model import HostI2S

# The echo reference: Lichuang/BOX-style boards feed the speaker line back
# into ES7210 MIC3. The model puts a full-scale DAC output at -6 dBFS at
# that input (the boards' schematics were not at hand; the figure is the
# model's, chosen so 0 dB of PGA keeps the loudest reply clear of clipping).
LOOPBACK_DB = -6.0


class OutputPin:
    """A GPIO driven by the firmware (machine.Pin(n, Pin.OUT)): the
    amplifier enable line; None until first driven (high impedance).
    With watch_amp() it records each time it turned the amplifier on while
    no I2S clock ran, and counts (turned_on) each time it turned it on."""

    def __init__(self, gpio):
        self.gpio = gpio
        self.level = None
        self._amp = None
        self.unclocked_on = []
        self.turned_on = 0

    def watch_amp(self, active, clock):
        self._amp = (active, clock)

    def value(self, v=None):
        if v is None:
            return self.level or 0
        was, self.level = self.level, 1 if v else 0
        if self._amp is not None and self.level == self._amp[0]:
            if was != self.level:
                self.turned_on += 1
            if not self._amp[1]():
                self.unclocked_on.append(self.level)


class HostFrontend:
    def __init__(self, i2c, profile, hardware=None, bus="I2C0"):
        # profile: what the firmware was built for; hardware: the simulated
        # board's real chips (the same profile unless a test wires it apart)
        self.profile = profile
        hardware = hardware or profile
        audio = profile["audio"]
        self.mode = audio["mode"]
        self.rate = audio["rate"]
        self.mic_rate = audio["mic_rate"]
        self.mic_slot = audio.get("mic_slot", 0)
        self.ref_slot = audio.get("ref_slot", -1)
        # The I2S controller as the engine drives it: MCLK for the codecs,
        # the frame the mic side reads (started by start_i2s()).
        self.i2s = HostI2S(audio)
        self.dac = self.adc = self.amp_model = self.amp_pin = None
        self.models = {}
        for cd in hardware["codecs"]:
            model = ES8311Model() if cd["chip"] == "es8311" else ES7210Model()
            model.clock = self.i2s.mclk_hz
            i2c.attach(cd["addr"], model)
            self.models[cd["chip"]] = model
            if cd["role"] in ("dac", "both"):
                self.dac = model
            if cd["role"] in ("adc", "both"):
                self.adc = model
        amp = hardware.get("amp")
        if amp and amp["kind"] == "pca9557":
            self.amp_model = PCA9557Model()
            self.amp_model.watch_amp(amp["pin"], amp["active"], self.i2s.mclk_hz)
            i2c.attach(amp["addr"], self.amp_model)
            self.models["pca9557"] = self.amp_model
        elif amp:
            self.amp_pin = OutputPin(amp["pin"])
            self.amp_pin.watch_amp(amp["active"], self.i2s.mclk_hz)
        self._amp = amp
        from codec import Frontend
        self.driver = Frontend(i2c, profile, "%s (SDA GPIO%d, SCL GPIO%d)" % (
            bus, profile["i2c"]["sda"], profile["i2c"]["scl"]), self._make_pin)

    def _make_pin(self, gpio):
        if self.amp_pin is not None and self.amp_pin.gpio == gpio:
            return self.amp_pin
        return OutputPin(gpio)  # a line the simulated board has nothing on

    def start_i2s(self, rate=None):
        """The engine started (xzaudio.start on the board): MCLK runs."""
        self.i2s.start(rate)

    def open(self):
        self.driver.open()

    def output(self, on):
        self.driver.output(on)

    def amp_unclocked(self):
        """How many times the amplifier was switched on with no I2S clock."""
        sw = self.amp_model if self.amp_model is not None else self.amp_pin
        return len(sw.unclocked_on) if sw is not None else 0

    def amp_turned_on(self):
        """How many times the amplifier went from off to on (a click each)."""
        sw = self.amp_model if self.amp_model is not None else self.amp_pin
        return sw.turned_on if sw is not None else 0

    def amp_on(self):
        if self._amp is None:
            return True   # an amplifier always on (no enable line)
        if self.amp_model is not None:
            level = self.amp_model.level(self._amp["pin"])
        else:
            level = self.amp_pin.level
        return level == self._amp["active"]

    def speaker_fault(self):
        """None when what the speaker plays is heard, else why not."""
        if self.dac is not None:
            why = self.dac.dac_fault(self.rate)
            if why:
                return "es8311: " + why
        if not self.amp_on():
            return "amplifier off"
        return None

    def mic_fault(self):
        if self.adc is None:
            return None   # an I2S microphone: on as soon as it is clocked
        why = self.i2s.rx_fault()
        if why:
            return "i2s: " + why
        if isinstance(self.adc, ES7210Model):
            why = self.adc.slot_fault(self.mic_slot, self.mode == "tdm")
            return "es7210: " + why if why else None
        why = self.adc.adc_fault(self.mic_rate)
        return "es8311: " + why if why else None

    def reference_slot(self, peak_dbfs):
        """What the echo reference slot carries while the speaker plays PCM
        whose peak is peak_dbfs: (level in dBFS, clipped), or a string why
        there is no reference."""
        if self.mode != "tdm" or self.ref_slot < 0 or not isinstance(self.adc, ES7210Model):
            return "no reference slot in this wiring"
        why = self.i2s.rx_fault() or self.adc.slot_fault(self.ref_slot) or self.speaker_fault()
        if why:
            return why
        dac_db = self.dac.regs[0x32] / 2 - 95.5 if self.dac is not None else 0.0
        return self.adc.slot_level(self.ref_slot, peak_dbfs + dac_db + LOOPBACK_DB)

    @property
    def hw_volume(self):
        return self.driver.hw_volume

    def set_volume(self, volume):
        self.driver.set_volume(volume)

    def speaker_percent(self):
        """The output level the DAC's volume register sets (100 without a codec)."""
        return self.dac.dac_percent() if self.dac is not None else 100

    def power_down(self):
        self.driver.power_down()
