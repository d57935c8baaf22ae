"""The console reader every board test waits through (tools/simkit/console.py's
line rule, testkit's ConsoleLog behind a real child process's pipes): a wait
returns the matching event, and when the event cannot come it fails at once,
saying why and showing the last lines, instead of running into its deadline."""
import sys

import pytest

from simkit.console import parse
from testkit.consoles import PipeConsole

# A stand-in console: prints what it is given (one line per argument), then
# waits for a line on stdin before it ends, so the test decides when.
PRINTER = "import sys\nfor a in sys.argv[1:]:\n    print(a, flush=True)\nsys.stdin.readline()\n"


async def console(*lines):
    return await PipeConsole.start([sys.executable, "-c", PRINTER, *lines], name="the printer")


def test_a_line_is_an_event_only_as_a_json_object_with_an_event_key():
    assert parse('{"event": "state", "state": "idle"}') == {"event": "state", "state": "idle"}
    assert parse("I (1234) device: {not an event}") is None
    assert parse('{"state": "idle"}') is None
    assert parse('["event"]') is None
    assert parse("{broken") is None


async def test_a_wait_returns_the_match_at_or_after_its_mark():
    c = await console('{"event": "state", "state": "idle"}', "I (5) a log line",
                      '{"event": "state", "state": "listening"}')
    try:
        ev = await c.wait_event("state", state="listening")
        assert ev == {"event": "state", "state": "listening"}
        assert await c.wait_event("state") == {"event": "state", "state": "idle"}
        assert await c.wait_event("state", since=1) == ev
        assert "I (5) a log line" in c.lines and len(c.events) == 2
    finally:
        await c.close()


async def test_a_wait_for_an_event_that_cannot_come_fails_when_the_console_ends():
    c = await console('{"event": "boot", "wake_cause": "power_on"}', "I (9) bye")
    try:
        await c.wait_event("boot")
        await c.send("")                          # the printer ends
        with pytest.raises(AssertionError) as e:
            await c.wait_event("standby", timeout=120)
        assert "before the printer ended" in str(e.value) and "I (9) bye" in str(e.value)
    finally:
        await c.close()


async def test_an_event_line_that_breaks_the_schema_fails_the_next_wait_naming_it():
    c = await console('{"event": "player", "state": "dancing"}', '{"event": "state", "state": "idle"}')
    try:
        with pytest.raises(AssertionError) as e:
            await c.wait_event("state", state="idle", timeout=120)   # printed, but after a bad line
        assert "bad event line" in str(e.value) and "dancing" in str(e.value)
    finally:
        await c.close()
