# Register model of the NXP PCA9557 I/O expander on the host I2C bus:
# 0 input port (read-only: the pins' levels), 1 output port (reset 0x00),
# 2 polarity inversion (reset 0xF0), 3 configuration (reset 0xFF, 1 =
# input). Registers past 3 do not exist; writes there are recorded.
from hal.host.reg_model import RegModel


class PCA9557Model(RegModel):
    NAME = "pca9557"
    RESET = {0: 0x00, 1: 0x00, 2: 0xF0, 3: 0xFF}
    amp = None   # (pin, active level, clock) of the amplifier it enables

    def store(self, reg, value):
        if reg != 0:
            self.regs[reg] = value
        self.regs[0] = self.regs[1] & ~self.regs[3] & 0xFF  # inputs float to 0 here
        if self.amp is not None:
            pin, active, clock = self.amp
            on = self.level(pin) == active
            if on and not self._amp_was_on:
                self.turned_on += 1
            self._amp_was_on = on
            if on and not clock():
                self.unclocked_on.append(self.writes)

    def watch_amp(self, pin, active, clock):
        """Record (in unclocked_on) each write that leaves the amplifier
        on while `clock()` says no I2S clock runs. The rule is stock's order
        (lichuang_dev_board.cc switches the amplifier in EnableOutput, after
        the output path opens), not a datasheet's: the pop and the current
        it would cost are not modelled. turned_on counts the times the
        amplifier went from off to on (each one a click in the speaker)."""
        self.amp = (pin, active, clock)
        self.unclocked_on = []
        self.turned_on = 0
        self._amp_was_on = False

    def level(self, pin):
        """The pin's level when it is an output, else None (high impedance)."""
        if self.regs[3] & (1 << pin):
            return None
        return 1 if self.regs[1] & (1 << pin) else 0
