# NXP PCA9557 8-bit I/O expander used as the amplifier switch (Lichuang-style
# boards: output 1 enables the speaker amplifier). Registers (datasheet):
# 0 input port, 1 output port (reset 0x00), 2 polarity inversion
# (reset 0xF0), 3 configuration (reset 0xFF: all inputs; 0 = output).
# The amplifier's pin and the profile's `hold` pins are touched: each
# output level is set before the pin becomes an output, so it never drives
# the wrong level. Lichuang's stock firmware drives output 0 high (LCD chip
# select idle) and output 2 low (camera power-down off) besides the
# amplifier on output 1 (lichuang_dev_board.cc).
from codec.chip import Chip

_OUT = 1
_CFG = 3


class PCA9557Switch(Chip):
    NAME = "pca9557"

    def __init__(self, i2c, addr, bus, pin, active, hold=()):
        Chip.__init__(self, i2c, addr, bus)
        self._bit = 1 << pin
        self._active = active
        self._hold = hold   # ((pin, level), ...) driven once at open

    def open(self):
        self._set(False)
        mask = self._bit
        for pin, level in self._hold:
            self.update(_OUT, 1 << pin, (1 << pin) if level else 0)
            mask |= 1 << pin
        self.update(_CFG, mask, 0)

    def _set(self, on):
        level = self._active if on else 1 - self._active
        self.update(_OUT, self._bit, self._bit if level else 0)

    def enable(self, on):
        self._set(on)
