"""Per-device pacing of requests, so a burst from the API never floods the
broker's queues for one device (mosquitto drops QoS 1 messages past its
max_queued_messages, 1000 by default, for a client that cannot keep up).

    pacer = Pacer(max_in_flight=8, max_waiting=32)
    await pacer.acquire(device_id)    # DeviceBusy when max_waiting already wait
    pacer.hold(device_id, req_id)     # published: the slot is held until...
    pacer.acked(req_id)               # ...the device acks, or slot_timeout_s passes
    pacer.release(device_id)          # not published after all

A slot is taken per request from before it is published until its ack (or
the timeout: a device that is offline never acks, and its requests must not
wait for ever). A caller that waits longer than wait_s for a slot gets
DeviceBusy too. max_in_flight 0 turns pacing off (the bench's "before").
"""
import asyncio
import collections

from ..errors import DeviceBusy


class _Device:
    __slots__ = ("in_flight", "waiting")

    def __init__(self):
        self.in_flight = 0
        self.waiting = collections.deque()


class Pacer:
    def __init__(self, max_in_flight=8, max_waiting=32, slot_timeout_s=5.0, wait_s=10.0):
        self.max_in_flight = max_in_flight
        self.max_waiting = max_waiting
        self.slot_timeout_s = slot_timeout_s
        self.wait_s = wait_s
        self._devices = {}
        self._held = {}          # req_id -> (device_id, timer)

    def _busy(self, device_id, d, why):
        return DeviceBusy("device %s has %d requests waiting for acks and %d queued: %s"
                          % (device_id, d.in_flight, len(d.waiting), why), retry_after_s=self.slot_timeout_s)

    async def acquire(self, device_id, wait=True):
        """Take a slot; with wait=False only a free one (else DeviceBusy at once)."""
        if not self.max_in_flight:
            return
        d = self._devices.setdefault(device_id, _Device())
        if d.in_flight < self.max_in_flight and not d.waiting:
            d.in_flight += 1
            return
        if not wait or len(d.waiting) >= self.max_waiting:
            raise self._busy(device_id, d, "try again later")
        fut = asyncio.get_running_loop().create_future()
        d.waiting.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.wait_s)
        except asyncio.TimeoutError:
            if fut.done() and not fut.cancelled():
                return   # granted just as the wait ended: keep the slot
            self._drop(d, fut)
            raise self._busy(device_id, d, "no slot within %.0f s" % self.wait_s)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(device_id)
            else:
                self._drop(d, fut)
            raise

    @staticmethod
    def _drop(d, fut):
        fut.cancel()
        try:
            d.waiting.remove(fut)
        except ValueError:
            pass

    def release(self, device_id):
        """Give a slot back: to the first caller still waiting, else free it."""
        d = self._devices.get(device_id)
        if d is None:
            return
        while d.waiting:
            fut = d.waiting.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        d.in_flight -= 1
        if d.in_flight <= 0 and not d.waiting:
            del self._devices[device_id]

    def hold(self, device_id, req_id):
        if not self.max_in_flight:
            return
        # A request sent again (the same req_id) holds one slot, not two:
        # the board acks it once.
        self.acked(req_id)
        timer = asyncio.get_running_loop().call_later(self.slot_timeout_s, self.acked, req_id)
        self._held[req_id] = (device_id, timer)

    def acked(self, req_id):
        held = self._held.pop(req_id, None)
        if held is not None:
            held[1].cancel()
            self.release(held[0])
