# Base of the host's I2C register models of the codec chips: 8-bit
# register pointer then data, auto-increment, reset values, and a record of
# writes to registers the model does not know (a driver bug shows up in a
# test instead of being absorbed). The DS3231 model (ds3231_model.py) is
# the older, self-contained pattern; this base serves the audio chips.
#
# A codec model is given `clock` (a function returning MCLK in Hz, 0 while
# it is off). Writes that arrive while MCLK is off are refused (kept in
# `refused`, not stored): stock xiaozhi-esp32 (box_audio_codec.cc) makes
# and enables the I2S channels, MCLK included, before any codec register
# is written, and some codecs reset their logic when MCLK stops. This rule
# is that order made strict, not a datasheet statement: neither codec's
# datasheet was at hand (docs/hardware.md).
class RegModel:
    NAME = "chip"
    RESET = {}      # register -> value after power-on
    KNOWN = ()      # registers the chip has (the RESET keys are known too)

    def __init__(self):
        self.regs = bytearray(256)
        self.unknown = []   # (register, value) written outside KNOWN
        self.refused = []   # (register, value) written while MCLK was off
        self.clock = None   # MCLK in Hz, for a chip that needs it
        self.writes = 0
        self._ptr = 0
        self.power_on()

    def power_on(self):
        for i in range(256):
            self.regs[i] = 0
        for reg, value in self.RESET.items():
            self.regs[reg] = value

    def _known(self, reg):
        return reg in self.RESET or reg in self.KNOWN

    def write(self, data):
        if not data:
            return
        self._ptr = data[0]
        unclocked = self.clock is not None and not self.clock()
        for b in data[1:]:
            if unclocked:
                self.refused.append((self._ptr, b))
            elif self._known(self._ptr):
                self.store(self._ptr, b)
            else:
                self.unknown.append((self._ptr, b))
            self.writes += 1
            self._ptr = (self._ptr + 1) & 0xFF

    def store(self, reg, value):
        self.regs[reg] = value

    def read(self, n):
        out = bytearray(n)
        for i in range(n):
            out[i] = self.regs[self._ptr]
            self._ptr = (self._ptr + 1) & 0xFF
        return out
