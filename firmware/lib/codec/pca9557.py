# NXP PCA9557 8-bit I/O expander used as the amplifier switch (Lichuang-style
# boards: output 1 enables the speaker amplifier). Registers (datasheet):
# 0 input port, 1 output port (reset 0x00), 2 polarity inversion
# (reset 0xF0), 3 configuration (reset 0xFF: all inputs; 0 = output).
# Only the amplifier's pin is touched: its output level is set before it
# becomes an output, so it never drives the wrong level.
from codec.chip import Chip

_OUT = 1
_CFG = 3


class PCA9557Switch(Chip):
    NAME = "pca9557"

    def __init__(self, i2c, addr, bus, pin, active):
        Chip.__init__(self, i2c, addr, bus)
        self._bit = 1 << pin
        self._active = active

    def open(self):
        self._set(False)
        self.update(_CFG, self._bit, 0)

    def _set(self, on):
        level = self._active if on else 1 - self._active
        self.update(_OUT, self._bit, self._bit if level else 0)

    def enable(self, on):
        self._set(on)
