"""The thread pool every provider uses for CPU-bound or blocking work.

Model inference (VAD, Whisper, Piper) and subprocess waits must never run
on the event loop: one blocked loop stalls the paced audio of every
session. The native libraries release the GIL, so threads give real
parallelism on the machine's cores.
"""
import asyncio
import concurrent.futures
import functools
import os

_pool = None


def pool():
    """The shared executor, created on first use."""
    global _pool
    if _pool is None:
        workers = int(os.environ.get("XIAOZHI_CPU_WORKERS", "0")) or (os.cpu_count() or 2) + 2
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="xiaozhi-cpu")
    return _pool


async def run_blocking(fn, *args, **kwargs):
    """Run `fn(*args, **kwargs)` in the pool and await its result."""
    loop = asyncio.get_running_loop()
    if kwargs:
        fn = functools.partial(fn, **kwargs)
    return await loop.run_in_executor(pool(), fn, *args)
