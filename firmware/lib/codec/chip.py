# Register access shared by the codec drivers: one chip at one 7-bit I2C
# address. An address that does not answer becomes a CodecError that names
# the chip, the address and the bus, so a wrong profile fails at boot with
# one clear line instead of a silent board.
class CodecError(OSError):
    pass


class Chip:
    NAME = "chip"

    def __init__(self, i2c, addr, bus):
        self._i2c = i2c
        self.addr = addr
        self.bus = bus
        self._b = bytearray(1)

    def error(self, why):
        return CodecError("%s at 0x%02x on %s: %s" % (self.NAME, self.addr, self.bus, why))

    def w(self, reg, value):
        self._b[0] = value
        try:
            self._i2c.writeto_mem(self.addr, reg, self._b)
        except OSError:
            raise self.error("no answer (check the profile's address and the I2C pins)")

    def r(self, reg):
        try:
            self._i2c.readfrom_mem_into(self.addr, reg, self._b)
        except OSError:
            raise self.error("no answer (check the profile's address and the I2C pins)")
        return self._b[0]

    def seq(self, pairs):
        """Write (register, value) pairs given as one bytes: reg, val, reg, val..."""
        for i in range(0, len(pairs), 2):
            self.w(pairs[i], pairs[i + 1])

    def update(self, reg, mask, value):
        self.w(reg, (self.r(reg) & ~mask & 0xFF) | (value & mask))
