# Everest ES8311 mono codec (DAC for the speaker, ADC for one mic), I2S
# slave with MCLK = 256 x fs from the ESP32, 16-bit Philips I2S.
# The sequences follow esp_codec_dev's es8311.c (open, set_fs, start,
# suspend, set_vol, mute, set_mic_gain; docs/hardware.md names the commit).
from codec.chip import Chip

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_RESET = const(0x00)
_CLK1 = const(0x01)
_CLK2 = const(0x02)
_CLK3 = const(0x03)
_CLK4 = const(0x04)
_CLK5 = const(0x05)
_CLK6 = const(0x06)
_CLK7 = const(0x07)
_CLK8 = const(0x08)
_SDPIN = const(0x09)
_SDPOUT = const(0x0A)
_PGA = const(0x16)
_DAC_MUTE = const(0x31)
_DAC_VOL = const(0x32)
_ID1 = const(0xFD)
_ID2 = const(0xFE)

# open(): I2C noise filter (written twice: the first write after power-up
# may be lost), clocks off, reset dividers, PGA, system defaults, CSM on.
_OPEN = bytes((0x44, 0x08, 0x44, 0x08, 0x01, 0x30, 0x02, 0x00, 0x03, 0x10, 0x16, 0x24,
               0x04, 0x10, 0x05, 0x00, 0x0B, 0x00, 0x0C, 0x00, 0x10, 0x1F, 0x11, 0x7F,
               0x00, 0x80))
_OPEN_TAIL = bytes((0x13, 0x10, 0x1B, 0x0A, 0x1C, 0x6A, 0x44, 0x58))
# suspend: volumes to 0, ADC/DAC/analog down, CSM off, clocks off.
_SUSPEND = bytes((0x32, 0x00, 0x17, 0x00, 0x0E, 0xFF, 0x12, 0x02, 0x14, 0x00, 0x0D, 0xFA,
                  0x15, 0x00, 0x02, 0x10, 0x00, 0x00, 0x00, 0x1F, 0x01, 0x30, 0x01, 0x00,
                  0x45, 0x00, 0x0D, 0xFC, 0x02, 0x00))
# esp_codec_dev's clock coefficients at MCLK = 256 fs (es8311.c coeff_div,
# the rows 2.048 MHz/8 kHz .. 12.288 MHz/48 kHz: pre_div 1, pre_multi x1
# (REG02 code 0), adc_div and dac_div 1, single speed, LRCK divider 0x0FF,
# BCLK divider 4, ADC OSR 0x10): only the DAC OSR changes with the rate.
_RATES = {8000: (0, 0x20), 11025: (0, 0x20), 12000: (0, 0x20), 16000: (0, 0x20),
          22050: (0, 0x10), 24000: (0, 0x10), 32000: (0, 0x10), 44100: (0, 0x10),
          48000: (0, 0x10)}


class ES8311(Chip):
    NAME = "es8311"

    def __init__(self, i2c, addr, bus, role="both"):
        Chip.__init__(self, i2c, addr, bus)
        self.role = role
        self.enabled = False

    def open(self):
        ident = (self.r(_ID1), self.r(_ID2))
        if ident != (0x83, 0x11):
            raise self.error("chip id %02x %02x, not an ES8311 (83 11)" % ident)
        self.seq(_OPEN)
        self.update(_RESET, 0x40, 0)      # slave: the ESP32 drives BCLK and WS
        self.w(_CLK1, 0x3F)               # all clocks on, MCLK from its pin
        self.update(_CLK6, 0x20, 0)       # BCLK not inverted
        self.seq(_OPEN_TAIL)              # ADC HPF, DAC reference to the ADC's right channel

    def set_rate(self, rate):
        multi, dac_osr = _RATES[rate]
        self.update(_SDPIN, 0x1F, 0x0C)   # 16-bit words, Philips I2S
        self.update(_SDPOUT, 0x1F, 0x0C)
        self.update(_CLK2, 0xF8, multi << 3)
        self.w(_CLK5, 0x00)
        self.update(_CLK3, 0x7F, 0x10)
        self.update(_CLK4, 0x7F, dac_osr)
        self.update(_CLK7, 0x3F, 0x00)
        self.w(_CLK8, 0xFF)
        self.update(_CLK6, 0x1F, 0x03)

    def enable(self, on):
        if not on:
            self.power_down()
            return
        self.w(_RESET, 0x80)
        self.w(_CLK1, 0x3F)
        self.update(_SDPIN, 0x40, 0)      # serial ports unmuted
        self.update(_SDPOUT, 0x40, 0)
        self.w(0x17, 0xBF)                # ADC volume 0 dB
        self.w(0x0E, 0x02)                # ADC, PGA powered
        if self.role in ("dac", "both"):
            self.w(0x12, 0x00)            # DAC powered
        self.w(0x14, 0x1A)                # analog mic, PGA input
        self.w(0x0D, 0x01)                # analog and bias up
        self.w(0x15, 0x40)
        self.w(0x37, 0x08)
        self.w(0x45, 0x00)
        self.enabled = True

    def power_down(self):
        self.seq(_SUSPEND)
        self.enabled = False

    def set_volume(self, volume):
        # esp_codec_dev's curve: 0..100 -> -50..0 dB, plus 3.6 dB for a
        # 3.3 V DAC into a 5 V amplifier; the register is 0.5 dB per step
        # from -95.5 dB, which makes it 98 + volume. 0 is the register's floor.
        v = max(0, min(100, int(volume)))
        self.w(_DAC_VOL, 98 + v if v else 0)

    def mute(self, on):
        self.update(_DAC_MUTE, 0x60, 0x60 if on else 0)

    def set_mic_gain(self, db):
        self.w(_PGA, max(0, min(7, int(db) // 6)))  # 0..42 dB in 6 dB steps
