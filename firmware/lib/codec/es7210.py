# Everest ES7210 4-channel ADC (the microphones and the echo reference of
# Lichuang/BOX-style boards), I2S slave, 16-bit, TDM when 3 or 4 mics are
# on. The sequences follow esp_codec_dev's es7210.c (open, set_fs,
# mic_select, start, stop, set_gain, mute; docs/hardware.md names the commit).
from codec.chip import Chip

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_CLOCK_OFF = const(0x01)
_SDP1 = const(0x11)
_SDP2 = const(0x12)
_MIC1_GAIN = const(0x43)
_MIC12_POWER = const(0x4B)
_MIC34_POWER = const(0x4C)

_OPEN = bytes((0x00, 0xFF, 0x00, 0x41, 0x01, 0x3F, 0x09, 0x30, 0x0A, 0x30, 0x23, 0x2A,
               0x22, 0x0A, 0x20, 0x0A, 0x21, 0x2A))
_OPEN_ANALOG = bytes((0x40, 0x43, 0x41, 0x70, 0x42, 0x70, 0x07, 0x20, 0x02, 0xC1))
# In TDM the chip sends MIC1, MIC3, MIC2, MIC4 in slots 0..3 (xiaozhi-esp32
# box_audio_codec.cc sets its reference gain by physical mic for this).
SLOT_MIC = (0, 2, 1, 3)

_STOP = bytes((0x47, 0xFF, 0x48, 0xFF, 0x49, 0xFF, 0x4A, 0xFF, 0x4B, 0xFF, 0x4C, 0xFF,
               0x40, 0xC0, 0x01, 0x7F, 0x06, 0x07))


def gain_code(db):
    """esp_codec_dev's dB -> PGA code: 0..33 dB in 3 dB steps, then 34.5, 36, 37.5."""
    db = db + 0.5
    if db < 33:
        return 0 if db < 3 else int(db / 3)
    return 10 if db < 34.5 else 12 if db < 36 else 13 if db < 37 else 14


class ES7210(Chip):
    NAME = "es7210"

    # ref_mic: the physical mic (0..3) that carries the speaker loopback,
    # the echo reference, or None. It keeps its own gain (ref_db, 0 dB as
    # stock): the mics' 28-30 dB would drive the loud loopback into clipping.
    def __init__(self, i2c, addr, bus, mics=4, ref_mic=None, ref_db=0):
        Chip.__init__(self, i2c, addr, bus)
        self.mics = mics
        self.gain = gain_code(30)
        self.ref_mic = ref_mic
        self.ref_gain = gain_code(ref_db)
        self._clock_off = 0x3F
        self.enabled = False

    def _code(self, mic):
        return self.ref_gain if mic == self.ref_mic else self.gain

    def open(self):
        self.seq(_OPEN)
        self.update(0x08, 0x01, 0x00)     # slave: the ESP32 drives BCLK and WS
        self.seq(_OPEN_ANALOG)            # analog power, mic bias 2.87 V, OSR, dividers
        self._select()
        self.set_mic_gain(30)
        self._clock_off = self.r(_CLOCK_OFF)

    def _select(self):
        for i in range(4):
            self.update(_MIC1_GAIN + i, 0x10, 0)
        self.w(_MIC12_POWER, 0xFF)
        self.w(_MIC34_POWER, 0xFF)
        for i in range(self.mics):
            self.update(_CLOCK_OFF, 0x0B if i < 2 else 0x15, 0)
            self.w(_MIC12_POWER if i < 2 else _MIC34_POWER, 0x00)
            self.update(_MIC1_GAIN + i, 0x1F, 0x10 | self._code(i))
        self.w(_SDP2, 0x02 if self.mics >= 3 else 0x00)  # TDM from 3 mics up

    def set_rate(self, rate):
        # Slave mode: the chip follows the I2S clocks; only the word length
        # and the format are set (esp_codec_dev skips the dividers too).
        self.update(_SDP1, 0xE0, 0x60)    # 16-bit
        self.update(_SDP1, 0x03, 0x00)    # Philips I2S

    def enable(self, on):
        if not on:
            self.power_down()
            return
        self.w(_CLOCK_OFF, self._clock_off)
        self.w(0x06, 0x00)
        self.w(0x40, 0x43)
        for reg in (0x47, 0x48, 0x49, 0x4A):
            self.w(reg, 0x08)
        self._select()
        self.w(0x40, 0x43)
        self.w(0x00, 0x71)
        self.w(0x00, 0x41)
        self.enabled = True

    def power_down(self):
        self.seq(_STOP)
        self.enabled = False

    def set_volume(self, volume):
        pass  # an ADC has no output volume

    def mute(self, on):
        m = 0x03 if on else 0
        self.update(0x14, 0x03, m)
        self.update(0x15, 0x03, m)

    def set_mic_gain(self, db):
        """The microphones' gain; the echo reference keeps its own."""
        self.gain = gain_code(db)
        for i in range(self.mics):
            self.update(_MIC1_GAIN + i, 0x0F, self._code(i))
