# Proves the runner really awaits async tests and sees failures as failures.
import t

try:
    import asyncio
except ImportError:
    asyncio = None

_ran = []


async def test_async_body_runs():
    await asyncio.sleep(0)
    _ran.append("async")
    t.eq(_ran[-1], "async")


def test_raises_helper_catches_and_reports():
    e = t.raises(ValueError, int, "x")
    t.true(isinstance(e, ValueError))
    t.raises(AssertionError, t.raises, ValueError, int, "3")


def test_tmpdir_is_empty_and_writable():
    d = t.tmpdir()
    with open(d + "/f", "w") as f:
        f.write("x")
    import os
    t.eq(os.listdir(d), ["f"])
    t.eq(os.listdir(t.tmpdir()), [])


def test_asyncio_is_the_ports_own():
    # The runner must run coroutines, so asyncio has to be importable here.
    t.true(asyncio is not None, "asyncio importable")
    t.true(hasattr(asyncio, "sleep_ms") or hasattr(asyncio, "get_running_loop"), "a real asyncio")
