# Host GPIO: input pins with machine.Pin's value() and irq(), driven by the
# simulation (a button press, the DS3231 INT line).
#
# Handlers get the pin, as with machine.Pin. On the board they run in
# interrupt context, so app handlers must only set a flag; here they run
# synchronously from whatever changed the level.
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_FALLING = const(1)
_RISING = const(2)
IRQ_FALLING = _FALLING
IRQ_RISING = _RISING


class InputPin:
    IRQ_FALLING = _FALLING
    IRQ_RISING = _RISING

    def __init__(self, name, level=1):
        self.name = name
        self._level = level
        self._handler = None
        self._trigger = 0

    def value(self):
        return self._level

    def irq(self, handler=None, trigger=_FALLING):
        self._handler = handler
        self._trigger = trigger

    def drive(self, level):
        """Set the level from the simulated hardware side; fires edge irqs."""
        level = 1 if level else 0
        old = self._level
        self._level = level
        if self._handler is None or level == old:
            return
        if (level == 0 and self._trigger & _FALLING) or (
                level == 1 and self._trigger & _RISING):
            self._handler(self)


class Button(InputPin):
    """A push button to ground with a pull-up: pressed reads 0."""

    def press(self):
        self.drive(0)
        self.drive(1)


class RtcIntPin(InputPin):
    """The DS3231 INT/SQW line, following the register model."""

    def __init__(self, model):
        InputPin.__init__(self, "rtc_int", model.int_level())
        self._model = model
        model.on_int_change(self.drive)

    def value(self):
        return self._model.int_level()
