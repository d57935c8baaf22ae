"""The board's console as the HIL tests read it: JSON event lines among the
log lines, each checked against the console event schema (sim.event).

    c = Console(dut, target)
    c.send("wake")
    ev = c.event("player", state="pass_end", timeout=20)
    c.events                   # every event seen so far, in order
"""
import json
import re
import time

import pexpect

from xiaozhi_server import protocol as proto

_LINE = re.compile(rb"\{[^\r\n]*\}\r?\n")


class Console:
    def __init__(self, dut, target):
        self.dut = dut
        self.target = target
        self.events = []

    def send(self, line):
        self.dut.write(line)

    def _next(self, timeout):
        m = self.dut.expect(_LINE, timeout=timeout)
        ev = json.loads(m.group(0))
        reason = proto.validate("sim.event", ev)
        assert reason is None, "console printed an invalid event %r: %s" % (ev, reason)
        self.events.append(ev)
        return ev

    def event(self, event, timeout=20, **fields):
        """The next `event` line with these field values (a `name` field may be among them)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                ev = self._next(max(0.1, left))
            except pexpect.TIMEOUT:
                raise AssertionError("no %s event %r within %s s; seen:\n%s" % (
                    event, fields, timeout, "\n".join(json.dumps(e, ensure_ascii=False) for e in self.events[-30:])))
            if ev["event"] == event and all(ev.get(k) == v for k, v in fields.items()):
                return ev

    def seen(self, mark, event, timeout=20, **fields):
        """A matching event among those since index `mark`, else the next one:
        for lines whose order the device does not promise."""
        for ev in self.events[mark:]:
            if ev["event"] == event and all(ev.get(k) == v for k, v in fields.items()):
                return ev
        return self.event(event, timeout, **fields)

    def opener_heard(self, timeout=30):
        """Until the server's opener was played and the board listens again."""
        reply = self.seen(0, "reply", timeout)
        self.seen(self.events.index(reply) + 1, "state", timeout, state="listening")
        return reply

    def quiet_for(self, seconds, name, **fields):
        """Assert no `name` event with these fields arrives for `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                ev = self._next(left)
            except pexpect.TIMEOUT:
                return
            assert not (ev["event"] == name and all(ev.get(k) == v for k, v in fields.items())), \
                "unexpected %r" % (ev,)
