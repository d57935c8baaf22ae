"""The one event log of the board's console, whoever feeds it (a pipe, a
pty, pytest-embedded's pexpect DUT: tests/testkit/consoles.py).

    log = ConsoleLog()
    log.feed(text) ... log.end()          # from a reader (any thread)
    mark = log.mark()                     # before an action
    ev = log.wait("player", since=mark, state="pass_end", timeout=20)      # blocking
    ev = await log.wait_async("state", since=mark, state="idle")            # in a test's loop
    log.find("task", outcome="accepted")  # what came so far

A line is an event or a log line by simkit/console.py's rule, the one the
simulator uses. Each event is checked against the console event schema
(sim.event, docs/sim.md): a line that starts like an event but is not a
valid one lands in `bad` and fails every wait from then on, naming it.
A wait ends on the event, on the console's end, or at its deadline, with an
AssertionError that shows the last lines.
"""
import asyncio
import threading
import time

from simkit.console import parse
from xiaozhi_server import protocol as proto


def matches(ev, event, fields):
    return ev.get("event") == event and all(ev.get(k) == v for k, v in fields.items())


class ConsoleLog:
    def __init__(self, name="console"):
        self.name = name
        self.lines = []       # every line, log lines and events, in order
        self.events = []      # the events, in order
        self.bad = []         # (line, reason): event-like lines that are not valid events
        self.ended = False
        self.pull = None      # pull(timeout) for a source read on demand (pexpect); None: fed by a reader
        self._cond = threading.Condition()
        self._wakers = set()  # (loop, asyncio.Event) of async waiters

    # ---- the reader's side ----

    def feed(self, text, events_only=False):
        """One line. events_only: the stream carries nothing but events (the
        simulator's --json stdout), so any other line is a bad one."""
        ev = parse(text)
        reason = None
        if ev is not None:
            reason = proto.validate("sim.event", ev)
        elif text.startswith("{") or (events_only and text):
            reason = "not a console event"
        with self._cond:
            self.lines.append(text)
            if reason:
                self.bad.append((text, reason))
            elif ev is not None:
                self.events.append(ev)
        self._changed()

    def end(self):
        with self._cond:
            self.ended = True
        self._changed()

    def _changed(self):
        with self._cond:
            self._cond.notify_all()
            wakers = list(self._wakers)
        for loop, flag in wakers:
            try:
                loop.call_soon_threadsafe(flag.set)
            except RuntimeError:   # that loop is closed: its waiter is gone
                pass

    # ---- the test's side ----

    def mark(self):
        """Where the events stand now: `since=` for events after an action."""
        return len(self.events)

    def index(self, event, since=0, **fields):
        """Index of the first matching event at or after `since`, else None."""
        for i in range(since, len(self.events)):
            if matches(self.events[i], event, fields):
                return i
        return None

    def find(self, event, since=0, **fields):
        return [e for e in self.events[since:] if matches(e, event, fields)]

    def _done(self, event, since, fields, deadline, timeout):
        """The match, or None to wait on; raises when waiting cannot help."""
        if self.bad:
            raise AssertionError("%s printed a bad event line %r: %s" % ((self.name,) + self.bad[0]))
        i = self.index(event, since, **fields)
        if i is not None:
            return self.events[i]
        if self.ended or time.monotonic() >= deadline:
            raise AssertionError("no %s event %r %s; the last lines:\n%s" % (
                event, fields, "before %s ended" % self.name if self.ended else "within %s s" % timeout,
                "\n".join(self.lines[-60:])))
        return None

    def wait(self, event, timeout=20, since=0, **fields):
        """The first matching event at or after `since`, waiting for it."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                ev = self._done(event, since, fields, deadline, timeout)
                if ev is not None:
                    return ev
                if self.pull is None:
                    self._cond.wait(deadline - time.monotonic())
                    continue
            self.pull(deadline - time.monotonic())

    async def wait_async(self, event, timeout=20, since=0, **fields):
        """wait() for a test on an event loop: the loop runs on meanwhile."""
        if self.pull is not None:
            return await asyncio.to_thread(self.wait, event, timeout, since, **fields)
        deadline = time.monotonic() + timeout
        flag = asyncio.Event()
        waker = (asyncio.get_running_loop(), flag)
        with self._cond:
            self._wakers.add(waker)
        try:
            while True:
                flag.clear()   # before the look, so a line fed meanwhile sets it again
                ev = self._done(event, since, fields, deadline, timeout)
                if ev is not None:
                    return ev
                try:
                    await asyncio.wait_for(flag.wait(), deadline - time.monotonic())
                except asyncio.TimeoutError:
                    pass
        finally:
            with self._cond:
                self._wakers.discard(waker)
