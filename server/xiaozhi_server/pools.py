"""The thread pools for CPU-bound or blocking work, one per direction.

Model inference (VAD, Whisper, Piper), codecs and subprocess waits must
never run on the event loop: one blocked loop stalls the paced audio of
every session. The native libraries release the GIL, so threads give real
parallelism on the machine's cores.

Work is split so that reply audio never queues behind the rest (what the
devices send is decoded and judged in the VAD thread, see vad_silero):

- `run_blocking` (the general pool): providers' own work, ASR and TTS
  synthesis, which may take a second per call;
- `run_downstream`: resampling and encoding reply audio, a few ms per
  sentence, on which the paced frames of every speaking session wait.
"""
import asyncio
import concurrent.futures
import functools
import os

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
