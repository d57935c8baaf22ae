# Firmware test runner: runs unchanged under the MicroPython unix port and
# under CPython, because MicroPython has no unittest or pytest.
#
#   MICROPYPATH=firmware/lib:firmware:tests/firmware micropython tests/firmware/run.py [NAME...]
#
# Discovers tests/firmware/test_*.py, calls every function named test_*,
# awaits it when it returns a coroutine, and prints one line per test and the
# closing line "N passed, N failed" that CI reads. Exit status 1 on failure.
import gc
import sys
import os

for p in ("firmware/lib", "firmware", "tests/firmware"):
    if p not in sys.path:
        sys.path.append(p)
# MICROPYPATH replaces the unix port's default path, which holds its frozen
# asyncio; put it back or async tests could not run at all.
if sys.implementation.name == "micropython" and ".frozen" not in sys.path:
    sys.path.append(".frozen")

import asyncio  # noqa: E402  - an async test must run, never pass unrun
# Resident for the whole run, as on the device (app/heap.py START loads them
# first): compiled once, their strings interned once, instead of again per
# test module in a heap that the earlier modules' interned names scatter.
import proto  # noqa: E402,F401
import audio  # noqa: E402,F401


def _modules(names):
    found = sorted(f[:-3] for f in os.listdir("tests/firmware")
                   if f.startswith("test_") and f.endswith(".py"))
    if names:
        found = [m for m in found if m in names or m[5:] in names]
    return found


# Tests that build inputs far past what the board ever holds at once (a
# 64 KB message, a thousand boots of the simulated NVS in one process):
# they run with a roomy heap and are skipped, by name, in the app's own
# 256 KB one (the suite at `-X heapsize=256K`).
BIG_HEAP = 512 * 1024
NEEDS_BIG_HEAP = ("test_proto.test_oversized_text_is_refused_before_parsing",
                  "test_proto.test_mqtt_request_decoding",
                  "test_alarm_power_cut.test_a_thousand_power_cuts_leave_alarms_consistent")


def _heap_size():
    if not hasattr(gc, "mem_alloc"):
        return None  # CPython: no fixed heap
    return gc.mem_alloc() + gc.mem_free()


def _run_one(fn):
    res = fn()
    # A coroutine (CPython) or generator (MicroPython) means an async test.
    if res is not None and (hasattr(res, "send") or hasattr(res, "__await__")):
        asyncio.run(res)
        # MicroPython's asyncio.run keeps the loop, and with it every task
        # the test left waiting (a player's event reader); CPython's closes
        # it. A fresh loop each time keeps them out of the next test.
        if hasattr(asyncio, "new_event_loop"):
            asyncio.new_event_loop()


def main(argv):
    passed = failed = 0
    heap = _heap_size()
    small = heap is not None and heap < BIG_HEAP
    for modname in _modules(argv):
        before = set(sys.modules)
        mod = __import__(modname)
        tests = sorted(n for n in dir(mod) if n.startswith("test_"))
        for name in tests:
            fn = getattr(mod, name)
            if small and modname + "." + name in NEEDS_BIG_HEAP:
                print("skip %s.%s: needs more than a %d KB heap" % (modname, name, heap // 1024))
                continue
            try:
                _run_one(fn)
            except Exception as e:  # report and go on: one failure per line
                failed += 1
                print("FAIL %s.%s: %s: %s" % (modname, name, type(e).__name__, e))
                if hasattr(sys, "print_exception"):
                    sys.print_exception(e)
                else:
                    import traceback
                    traceback.print_exc()
            else:
                passed += 1
                print("ok   %s.%s" % (modname, name))
        # Each test module leaves once its tests ran, with every module it
        # brought in, so the suite fits the app's own 256 KB heap on the
        # unix port: each module's tests start on a heap like a fresh boot's.
        mod = fn = None
        for name in [m for m in sys.modules if m not in before]:
            del sys.modules[name]
        gc.collect()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


sys.exit(main(sys.argv[1:]))
