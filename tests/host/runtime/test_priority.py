"""The priority table (docs/runtime.md, start_app_task), over the wire:
for every pair of sources, a second task request preempts, replaces or is
refused."""
import itertools

import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.protocol import priority

SOURCES = ["mqtt_immediate", "schedule", "voice", "default_chat"]
PLAYER = {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
          "self.mp3.stop": lambda a: {"stopped": True},
          "self.mp3.get_list": lambda a: {"files": ["lesson001.mp3"]},
          "self.mp3.get_status": lambda a: {"state": "playing", "name": "lesson001.mp3", "repeat_left": 1}}
EXPECTED = {(a, b): ("preempt" if proto.SOURCE_PRIORITY[b] > proto.SOURCE_PRIORITY[a]
                     else "replace" if a == b else "refuse")
            for a, b in itertools.product(SOURCES, SOURCES)}


@pytest.mark.parametrize("first,second", sorted(EXPECTED))
def test_decision_table(first, second):
    assert priority.decide(first, second)[0] == EXPECTED[(first, second)]


def test_a_finished_task_holds_no_priority():
    assert priority.decide(None, "default_chat")[0] == "preempt"


@pytest.fixture
async def server(start_server):
    return await start_server(server_config(None, apps={"opener_lines": {"zh": [], "en": []}}))


@pytest.mark.parametrize("first,second", sorted(EXPECTED))
async def test_every_pair_over_the_wire(server, first, second):
    async with WireDevice(server.ws.url, tools=PLAYER, page_limit=10) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        r1 = await dev.start_task("english_learning", "repeater", first, {"name": "lesson001.mp3", "repeat": 2})
        assert r1["result"]["accepted"] is True
        r2 = await dev.start_task("english_translation", "live_translate", second)
        res = r2["result"]
        if EXPECTED[(first, second)] == "refuse":
            assert res["accepted"] is False and first in res["reason"]
            assert res["active_app_id"] == "english_learning" and res["interaction_mode"] == "PLAY_AUDIO"
            assert ("self.mp3.stop", {}) not in dev.tool_calls
        else:
            assert res["accepted"] is True and res["interaction_mode"] == "TRANSLATION"
            # preempting stopped the running lesson through its stop skill
            await dev.wait_for(lambda: ("self.mp3.stop", {}) in dev.tool_calls, timeout=5)


async def test_unknown_app_and_bad_params_are_errors_and_change_nothing(server):
    async with WireDevice(server.ws.url, tools=PLAYER, page_limit=10) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        ok = await dev.start_task("english_translation", "live_translate", "voice")
        assert ok["result"]["accepted"]
        bad = await dev.start_task("weather", "forecast", "voice")
        assert bad["error"]["code"] == proto.RPC_UNKNOWN_TASK and "unknown app" in bad["error"]["message"]
        bad = await dev.start_task("english_learning", "repeater", "mqtt_immediate", {"name": "../boot.py"})
        assert bad["error"]["code"] == proto.RPC_INVALID_PARAMS and "not a path" in bad["error"]["message"]
        bad = await dev.start_task("english_learning", "digit_recitation", "mqtt_immediate")
        assert "not available yet" in bad["error"]["message"]
        bad = await dev.request(proto.METHOD_APP_START_TASK, {"app_id": "chat"})
        assert bad["error"]["code"] == proto.RPC_INVALID_PARAMS
        session = next(iter(server.services.sessions))
        assert session.runtime.active == "english_translation.live_translate"


async def test_a_finished_lesson_does_not_block_the_child(server):
    status = {"state": "playing"}
    tools = dict(PLAYER, **{"self.mp3.get_status": lambda a: dict(status, repeat_left=0)})
    async with WireDevice(server.ws.url, tools=tools, page_limit=10) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        await dev.start_task("english_learning", "repeater", "mqtt_immediate", {"name": "lesson001.mp3"})
        r = await dev.start_task("chat", "conversation", "voice")
        assert r["result"]["accepted"] is False
        status["state"] = "idle"   # the lesson ended on the device
        r = await dev.start_task("chat", "conversation", "voice")
        assert r["result"]["accepted"] is True and r["result"]["active_app_id"] == "chat"
