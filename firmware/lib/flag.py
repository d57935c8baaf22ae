# A wake-up flag an interrupt handler may set (a button's irq on the
# board), with the same API everywhere: set(), await wait() (clears).
# ThreadSafeFlag where the port has it; on the host irq handlers run in
# the event loop's thread, so an Event does the same job.
import asyncio

_TSF = getattr(asyncio, "ThreadSafeFlag", None)


class Flag:
    def __init__(self):
        self._f = _TSF() if _TSF is not None else asyncio.Event()

    def set(self):
        self._f.set()

    async def wait(self):
        await self._f.wait()
        if _TSF is None:
            self._f.clear()
