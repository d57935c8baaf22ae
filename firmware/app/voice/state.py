# The device state machine (xiaozhi DeviceState), straight from the schema.
#
#   st = DeviceState()
#   st.listen(fn)                  # fn(old, new) after every applied change
#   st.go(proto.STATE_IDLE)        # True if applied, False if refused
#
# An illegal transition is refused and logged, never applied: the state a
# listener sees is always one the protocol allows. Interaction modes (CHAT,
# PLAY_AUDIO, TRANSLATION) are not states; they live with the app task.
import log
import proto

_log = log.get("state")


class DeviceState:
    def __init__(self, initial=proto.STATE_UNKNOWN):
        if initial not in proto.DEVICE_STATES:
            raise ValueError("unknown device state %r" % (initial,))
        self.state = initial
        self.refused = 0  # illegal transitions asked for since boot
        self._listeners = []

    def listen(self, fn):
        self._listeners.append(fn)

    def can(self, new):
        return new in proto.DEVICE_TRANSITIONS.get(self.state, ())

    def go(self, new):
        """Move to `new`; staying in the same state is a no-op that succeeds."""
        old = self.state
        if new == old:
            return True
        if new not in proto.DEVICE_STATES or not self.can(new):
            self.refused += 1
            _log.warn("refused transition %s -> %s", old, new)
            return False
        self.state = new
        for fn in self._listeners:
            try:
                fn(old, new)
            except Exception as e:  # a broken listener must not stop the device
                _log.error("state listener failed: %r", e)
        return True

    def go_idle(self):
        """Back to idle from wherever the protocol allows it (recovery path)."""
        if self.state == proto.STATE_IDLE:
            return True
        if self.can(proto.STATE_IDLE):
            return self.go(proto.STATE_IDLE)
        return False

    def is_(self, *states):
        return self.state in states
