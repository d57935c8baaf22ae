"""The board's console as the HIL tests read it: pytest-embedded's DUT fed
into testkit's one console log (testkit/consoles.py, PexpectConsole), each
event checked against the console event schema (sim.event).

    c = Console(dut, target)
    c.send("wake")
    ev = c.event("player", state="pass_end", timeout=20)   # the next one
    c.seen(mark, "task", source="mqtt_immediate")          # at or after index mark
    c.events                   # every event seen so far, in order
"""
import time

from testkit.consoles import PexpectConsole


class Console(PexpectConsole):
    def __init__(self, dut, target):
        super().__init__(dut)
        self.target = target

    def event(self, event, timeout=20, **fields):
        """The next `event` line with these field values (a `name` field may be among them)."""
        return self.next(event, timeout, **fields)

    def opener_heard(self, timeout=30):
        """Until the server's opener was played and the board listens again."""
        reply = self.seen(0, "reply", timeout)
        self.seen(self.events.index(reply) + 1, "state", timeout, state="listening")
        return reply

    def quiet_for(self, seconds, name, **fields):
        """Assert no `name` event with these fields arrives for `seconds`.
        Absence has no event to wait on: this one window is on the clock."""
        mark = len(self.events)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.log.pull(deadline - time.monotonic())
        assert not self.log.find(name, mark, **fields), "unexpected %r" % (self.log.find(name, mark, **fields),)
