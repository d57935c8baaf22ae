# Host I2C bus: the machine.I2C methods the drivers use, routed to device
# models by address. A model has write(data) (pointer byte first) and
# read(n); an address without a model does not acknowledge, which
# machine.I2C reports as OSError(ENODEV).
from hal import errors


class I2CBus:
    def __init__(self):
        self._devices = {}

    def attach(self, addr, model):
        self._devices[addr] = model

    def _dev(self, addr):
        dev = self._devices.get(addr)
        if dev is None:
            raise OSError(errors.ENODEV)
        return dev

    def scan(self):
        return sorted(self._devices)

    def writeto(self, addr, buf):
        self._dev(addr).write(bytes(buf))
        return len(buf)

    def readfrom(self, addr, n):
        return bytes(self._dev(addr).read(n))

    def readfrom_into(self, addr, buf):
        buf[:] = self._dev(addr).read(len(buf))

    def writeto_mem(self, addr, memaddr, buf):
        self._dev(addr).write(bytes((memaddr,)) + bytes(buf))

    def readfrom_mem(self, addr, memaddr, n):
        dev = self._dev(addr)
        dev.write(bytes((memaddr,)))
        return bytes(dev.read(n))

    def readfrom_mem_into(self, addr, memaddr, buf):
        dev = self._dev(addr)
        dev.write(bytes((memaddr,)))
        buf[:] = dev.read(len(buf))
