# Board profiles: a board's wiring as data (firmware/boards/<name>.json).
#
# The same checks run on every interpreter: tools/flash.py and tools/sim.py
# refuse a bad profile before building or booting, the host HAL checks the
# one it boots, and a host test checks every file. A bad profile raises
# ProfileError naming the file and the field ("sening: audio.pins.mclk:
# ..."). docs/hardware.md describes each field.
#
# On the board the profile is frozen as the module `board_profile`
# (PROFILE = {...}, written by tools/flash.py build); elsewhere it is read
# from its JSON file.
MODES = ("duplex", "tdm", "simplex")
CHIPS = ("es8311", "es7210")
_GPIO_MAX = 48      # ESP32-S3: GPIO0..GPIO48
_RTC_GPIO_MAX = 21  # only RTC GPIOs wake the S3 from deep sleep (ext0)
_PINS = {
    "duplex": ("mclk", "bclk", "ws", "dout", "din"),
    "tdm": ("mclk", "bclk", "ws", "dout", "din"),
    "simplex": ("bclk", "ws", "dout", "mic_bclk", "mic_ws", "din"),
}


class ProfileError(ValueError):
    pass


class _Check:
    def __init__(self, name):
        self.name = name
        self.used = {}  # GPIO -> field that took it

    def fail(self, field, why):
        raise ProfileError("%s: %s: %s" % (self.name, field, why))

    def get(self, d, key, field, kind, optional=False):
        if not isinstance(d, dict) or key not in d:
            if optional:
                return None
            self.fail(field, "missing")
        v = d[key]
        if v is None and optional:
            return None
        if kind is int and (not isinstance(v, int) or isinstance(v, bool)):
            self.fail(field, "expected an integer, got %r" % (v,))
        if kind is not int and not isinstance(v, kind):
            self.fail(field, "expected %s, got %r" % (kind.__name__, v))
        return v

    def gpio(self, d, key, field, optional=False, rtc=False):
        v = self.get(d, key, field, int, optional)
        if v is None:
            return None
        top = _RTC_GPIO_MAX if rtc else _GPIO_MAX
        if not 0 <= v <= top:
            self.fail(field, "GPIO%d is not a%s GPIO of the ESP32-S3 (0..%d)"
                      % (v, "n RTC" if rtc else "", top))
        if v in self.used:
            self.fail(field, "GPIO%d is already %s" % (v, self.used[v]))
        self.used[v] = field
        return v

    def addr(self, d, field):
        v = self.get(d, "addr", field + ".addr", int)
        if not 0x08 <= v <= 0x77:
            self.fail(field + ".addr", "0x%02x is not a 7-bit I2C address (0x08..0x77)" % v)
        return v

    def one_of(self, d, key, field, choices):
        v = self.get(d, key, field, str)
        if v not in choices:
            self.fail(field, "%r is not one of %s" % (v, ", ".join(choices)))
        return v


def validate(p, name=None):
    """Check profile dict p; returns it, or raises ProfileError."""
    c = _Check(name or (p.get("name") if isinstance(p, dict) else None) or "profile")
    if not isinstance(p, dict):
        c.fail("profile", "expected a JSON object")
    got = c.get(p, "name", "name", str)
    if name is not None and got != name:
        c.fail("name", "%r differs from the file name %r" % (got, name))
    c.get(p, "title", "title", str)
    c.get(p, "source", "source", str)
    i2c = c.get(p, "i2c", "i2c", dict)
    c.gpio(i2c, "sda", "i2c.sda")
    c.gpio(i2c, "scl", "i2c.scl")
    c.get(i2c, "freq", "i2c.freq", int)

    audio = c.get(p, "audio", "audio", dict)
    mode = c.one_of(audio, "mode", "audio.mode", MODES)
    for key in ("rate", "mic_rate"):
        r = c.get(audio, key, "audio." + key, int)
        if r not in (8000, 16000, 24000, 32000, 44100, 48000):
            c.fail("audio." + key, "%d Hz is not a rate the codecs and the engine run" % r)
    pins = c.get(audio, "pins", "audio.pins", dict)
    for k in _PINS[mode]:
        c.gpio(pins, k, "audio.pins." + k)
    for k in pins:
        if k not in _PINS[mode] and not (k == "mclk" and mode == "simplex"):
            c.fail("audio.pins." + k, "not a pin of the %s mode (%s)" % (mode, ", ".join(_PINS[mode])))
    if mode == "simplex" and "mclk" in pins:
        c.gpio(pins, "mclk", "audio.pins.mclk", optional=True)
    if mode == "tdm":
        slots = c.get(audio, "tdm_slots", "audio.tdm_slots", int)
        if not 2 <= slots <= 8:
            c.fail("audio.tdm_slots", "%d: 2..8 slots" % slots)
        mic = c.get(audio, "mic_slot", "audio.mic_slot", int)
        ref = c.get(audio, "ref_slot", "audio.ref_slot", int)
        if not 0 <= mic < slots:
            c.fail("audio.mic_slot", "%d is not a slot of %d" % (mic, slots))
        if not (ref == -1 or (0 <= ref < slots and ref != mic)):
            c.fail("audio.ref_slot", "%d: -1 (none) or another slot of %d" % (ref, slots))

    codecs = c.get(p, "codecs", "codecs", list)
    roles = {}
    for i, cd in enumerate(codecs):
        f = "codecs[%d]" % i
        chip = c.one_of(cd, "chip", f + ".chip", CHIPS)
        c.addr(cd, f)
        role = c.one_of(cd, "role", f + ".role",
                        ("dac", "adc", "both") if chip == "es8311" else ("adc",))
        if chip == "es7210":
            mics = c.get(cd, "mics", f + ".mics", int)
            if not 1 <= mics <= 4:
                c.fail(f + ".mics", "%d: 1..4 microphones" % mics)
            if mode == "tdm" and mics < 3:
                c.fail(f + ".mics", "TDM needs 3 or 4 microphones on the ES7210 (it sends TDM from 3 up)")
        for k in ("mic_gain_db", "ref_gain_db"):
            g = c.get(cd, k, f + "." + k, int, optional=True)
            if g is not None and not 0 <= g <= 42:
                c.fail(f + "." + k, "%d: 0..42 dB" % g)
        for r in ("dac", "adc"):
            if role in (r, "both"):
                if r in roles:
                    c.fail(f + ".role", "two codecs drive the %s path (%s)" % (r, roles[r]))
                roles[r] = f
    if mode != "simplex" and ("dac" not in roles or "adc" not in roles):
        c.fail("codecs", "the %s mode needs a codec for the speaker (dac) and the mic (adc)" % mode)
    if mode == "tdm" and not any(cd["chip"] == "es7210" for cd in codecs):
        c.fail("codecs", "the tdm mode takes the mic from an ES7210")
    if mode == "simplex" and codecs:
        c.fail("codecs", "the simplex mode is for boards without a codec (I2S mic and amplifier)")

    amp = c.get(p, "amp", "amp", dict, optional=True)
    if amp is not None:
        kind = c.one_of(amp, "kind", "amp.kind", ("gpio", "pca9557"))
        if kind == "gpio":
            c.gpio(amp, "pin", "amp.pin")
        else:
            c.addr(amp, "amp")
            pin = c.get(amp, "pin", "amp.pin", int)
            if not 0 <= pin <= 7:
                c.fail("amp.pin", "%d is not a PCA9557 output (0..7)" % pin)
            # other expander outputs the board needs driven (LCD chip select,
            # camera power-down): [[pin, level], ...]
            for i, h in enumerate(c.get(amp, "hold", "amp.hold", list, optional=True) or ()):
                f = "amp.hold[%d]" % i
                if not (isinstance(h, list) and len(h) == 2 and h[0] in range(8) and h[0] != pin
                        and h[1] in (0, 1)):
                    c.fail(f, "%r: [output 0..7 other than amp.pin, level 0 or 1]" % (h,))
        if c.get(amp, "active", "amp.active", int) not in (0, 1):
            c.fail("amp.active", "the level that turns the amplifier on: 0 or 1")

    buttons = c.get(p, "buttons", "buttons", dict)
    c.gpio(buttons, "boot", "buttons.boot")
    for k in ("vol_up", "vol_down"):
        c.gpio(buttons, k, "buttons." + k, optional=True)
    sd = c.get(p, "sd", "sd", dict, optional=True)
    if sd is not None:
        width = c.get(sd, "width", "sd.width", int)
        if width not in (1, 4):
            c.fail("sd.width", "%d: 1 or 4 data lines" % width)
        for k in ("clk", "cmd", "d0") + (("d1", "d2", "d3") if width == 4 else ()):
            c.gpio(sd, k, "sd." + k)
    c.gpio(p, "rtc_int", "rtc_int", optional=True, rtc=True)
    c.gpio(p, "led", "led", optional=True)
    return p


def codec(p, chip):
    """The profile's entry for chip ("es8311", "es7210"), or None."""
    for cd in p["codecs"]:
        if cd["chip"] == chip:
            return cd
    return None


def load(path):
    """Read and check the JSON profile at path (host and tools)."""
    import json
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".json"):
        name = name[:-5]
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ProfileError("%s: cannot read %s (%s)" % (name, path, e))
    except ValueError as e:
        raise ProfileError("%s: %s is not JSON (%s)" % (name, path, e))
    return validate(data, name)


def frozen():
    """The profile frozen into the board image (module board_profile)."""
    try:
        import board_profile
    except ImportError:
        raise ProfileError("board: no board profile in this image: build it, or upload the app, "
                           "with tools/flash.py --board NAME")
    return validate(board_profile.PROFILE)


def engine_args(p):
    """The keyword arguments of xzaudio.start() for profile p: the I2S
    mode as the C module's constant number, the rates, every pin (-1 when
    the mode has no such line) and the TDM slots."""
    a = p["audio"]
    pins = a["pins"]
    mode = MODES.index(a["mode"])  # xzaudio.MODE_DUPLEX 0, MODE_TDM 1, MODE_SIMPLEX 2
    kw = {"mode": mode, "rate": a["rate"], "mic_rate": a["mic_rate"]}
    for k in ("mclk", "bclk", "ws", "dout", "din", "mic_bclk", "mic_ws"):
        kw[k] = pins.get(k, -1)
    kw["tdm_slots"] = a.get("tdm_slots", 4)
    kw["mic_slot"] = a.get("mic_slot", 0)
    kw["ref_slot"] = a.get("ref_slot", -1)
    return kw
