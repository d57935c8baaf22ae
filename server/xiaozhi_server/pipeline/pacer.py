"""Real-time paced sending of 60 ms audio frames to one device.

The device's decode queue holds 40 frames and drops overflow, and it
plays only what has arrived, so frames go out at the rate they play, at
most `lead_frames` (default 3) ahead of the play head. Frame n of a reply
plays at `start + n * frame`; if the producer falls behind (the device
ran dry), the timeline is re-anchored at the late frame rather than
bursting to catch up.

`drain()` waits until the last frame has had time to play, so `tts stop`
is not sent while the end of the reply is still in the device's queue.
`cancel()` (barge-in) wakes every wait at once; `send` then returns False.

Per reply it counts `frames`, `underruns`, `max_late` and `max_ahead`;
with `record=True`, `records` keeps (sent_at, ahead, late) per frame.
`clock` and `sleep` can be replaced by a virtual clock.

Every pacer of a process waits on one shared timer (`FrameTicks`): a
reply's timeline starts on the next `GRID` (20 ms) tick, a frame lasts
three ticks, and one timer wakes all the replies due at a tick in one
pass of the event loop (docs/server.md, One turn, step 5).
"""
import asyncio
import heapq
import math
import time
from typing import Awaitable, Callable

GRID = 0.020   # seconds; a frame of a whole number of ticks (60 ms) is due exactly on one


def _on_tick(t):
    return math.ceil(t / GRID - 1e-6) * GRID


class FrameTicks:
    """One timer for an event loop's pacers: `wait(due)` is a future set at
    the first tick at or after `due` (loop time, which is time.monotonic)."""

    def __init__(self, loop):
        self._loop = loop
        self._slots = {}     # tick number -> futures due then
        self._ticks = []     # heap of tick numbers with a slot
        self._timer = None
        self._timer_tick = None

    def wait(self, due):
        k = math.ceil(due / GRID - 1e-6)
        fut = self._loop.create_future()
        slot = self._slots.get(k)
        if slot is None:
            slot = self._slots[k] = []
            heapq.heappush(self._ticks, k)
            if self._timer is None or k < self._timer_tick:
                self._arm(k)
        slot.append(fut)
        return fut

    def _arm(self, k):
        if self._timer is not None:
            self._timer.cancel()
        self._timer_tick = k
        self._timer = self._loop.call_at(k * GRID, self._fire)

    def _fire(self):
        self._timer = None
        now = math.floor(self._loop.time() / GRID + 1e-6)
        ticks = self._ticks
        while ticks and ticks[0] <= now:
            for fut in self._slots.pop(heapq.heappop(ticks)):
                if not fut.done():
                    fut.set_result(None)
        if ticks:
            self._arm(ticks[0])


_ticks: dict = {}


def frame_ticks():
    """The running loop's FrameTicks (made at its first use)."""
    loop = asyncio.get_running_loop()
    ticks = _ticks.get(loop)
    if ticks is None:
        for old in [lp for lp in _ticks if lp.is_closed()]:
            del _ticks[old]     # loops of finished tests or benchmarks
        ticks = _ticks[loop] = FrameTicks(loop)
    return ticks


class Pacer:
    def __init__(self, send: Callable[[bytes], Awaitable[None]], frame_ms: int = 60, lead_frames: int = 3,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] | None = None, record: bool = False) -> None:
        self._send = send
        self.frame = frame_ms / 1000.0
        self.lead = lead_frames
        self._clock = clock
        self._sleep = sleep
        self._cancelled = asyncio.Event()
        self._waiter = None
        self.record = record
        self.reset()

    def reset(self) -> None:
        """Start a new reply: frame numbering restarts, a cancel is lifted."""
        self._start: float | None = None
        self._n = 0
        self._cancelled.clear()
        self.frames = 0
        self.underruns = 0
        self.max_late = 0.0
        self.max_ahead = 0.0
        self.records: list = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        self._cancelled.set()
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait(self, until):
        """Sleep until clock time `until` (a tick); True if a cancel interrupted it."""
        if self._sleep is not None:
            await self._sleep(until - self._clock())
            return self._cancelled.is_set()
        if self._cancelled.is_set():
            return True
        fut = self._waiter = frame_ticks().wait(until)
        try:
            await fut
        finally:
            self._waiter = None
        return self._cancelled.is_set()

    async def send(self, frame: bytes) -> bool:
        """Send one frame when its time comes. False if the reply was cancelled."""
        if self._cancelled.is_set():
            return False
        now = self._clock()
        n = self._n
        if self._start is None:
            self._start = _on_tick(now)
        elif now > self._start + n * self.frame:
            # The device has played everything it had: restart the timeline here.
            self._start = _on_tick(now - n * self.frame)
            self.underruns += 1
        due = self._start + (n - self.lead) * self.frame
        if now < due:
            if await self._wait(due) or self._cancelled.is_set():
                return False
        scheduled = max(due, now)
        await self._send(frame)
        sent = self._clock()
        late = sent - scheduled
        ahead = self._start + n * self.frame - sent
        self._n = n + 1
        self.frames += 1
        if late > self.max_late:
            self.max_late = late
        if ahead > self.max_ahead:
            self.max_ahead = ahead
        if self.record:
            self.records.append((sent, ahead, late))
        return True

    def play_end(self) -> float:
        """Clock time at which the device finishes the frames sent so far."""
        if self._start is None:
            return self._clock()
        return self._start + self._n * self.frame

    async def drain(self, tail: float = 0.0) -> bool:
        """Wait until the sent audio has played (plus `tail` s). False if cancelled."""
        until = self.play_end() + tail
        if self._cancelled.is_set():
            return False
        if until > self._clock() and await self._wait(until):
            return False
        return not self._cancelled.is_set()
