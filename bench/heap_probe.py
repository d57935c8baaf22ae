# Runs the frozen firmware (build/micropython/unix32-frozen, `import main`)
# with a sampler beside it on the same asyncio loop: every 20 ms it
# collects and records the live heap, printing a line at each new peak.
# MicroPython only; bench/firmware_heap.py reads the lines. The collection
# is what makes the figure "live" (garbage not counted); a peak shorter
# than one sampling period can be missed.
#
# With XZ_PROBE_SPEECH=1 it first starts the audio engine and the board's
# Voice (hal/esp32/voice.py, frozen as `voice`) over the speech engine's
# host stand-in (XZAUDIO_SR_MODELS), command words set, and keeps it for
# the whole run, as the board holds it: the figures then include the
# speech engine's Python side.
import asyncio
import gc
import os

if os.getenv("XZ_PROBE_SPEECH"):
    import sys
    _path = sys.path[:]
    sys.path[:] = [".frozen"]    # the frozen `voice`, not bench/voice.py beside this script
    import voice
    sys.path[:] = _path
    import xzaudio
    xzaudio.start()
    _voice = voice.Voice()
    if not _voice.start():
        raise SystemExit("heap-probe: the speech engine did not start")
    print("heap-probe: speech engine up (%s, %s)" % _voice._sp.models())

_peak = 0


async def _sample():
    global _peak
    while True:
        gc.collect()
        used = gc.mem_alloc()
        if used > _peak:
            _peak = used
            print("heap-probe: peak %d used, %d free" % (used, gc.mem_free()))
        await asyncio.sleep_ms(20)


_run = asyncio.run


def _run_with_probe(coro):
    async def both():
        asyncio.create_task(_sample())
        return await coro
    return _run(both())


asyncio.run = _run_with_probe
import main  # noqa: E402,F401  the frozen board entry point; runs the app
