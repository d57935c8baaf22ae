"""The answer to the device's app/start_task says what really happened: a
lesson not on the card is refused (not_found) before anything stops, a
device skill that fails is refused (skill_failed) and leaves the default
task, and an accepted lesson is already playing when the answer comes."""
import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto


def player(files, play_error=None):
    def play(args):
        if play_error:
            raise ValueError(play_error)
        return {"accepted": True, "status": "playing"}
    return {"self.mp3.play": play,
            "self.mp3.stop": lambda a: {"stopped": True},
            "self.mp3.get_list": lambda a: {"files": [{"name": f, "size": 1000} for f in files]},
            "self.mp3.get_status": lambda a: {"state": "idle", "name": None, "repeat_left": 0}}


@pytest.fixture
async def server(start_server):
    return await start_server(server_config(None, apps={"opener_lines": {"zh": [], "en": []}}))


def runtime(server):
    return next(iter(server.services.sessions)).runtime


async def ready(dev):
    await dev.hello()
    await dev.wait_for(lambda: dev.list_cursors, timeout=5)


async def test_a_lesson_not_on_the_card_is_refused_and_the_running_task_goes_on(server):
    async with WireDevice(server.ws.url, tools=player(["lesson001.mp3"]), page_limit=10) as dev:
        await ready(dev)
        ok = await dev.start_task("english_translation", "live_translate", "voice")
        assert ok["result"]["accepted"]
        r = await dev.start_task("english_learning", "repeater", "mqtt_immediate", {"name": "lesson009.mp3"})
        res = r["result"]
        assert res["accepted"] is False and res["code"] == proto.TASK_NOT_FOUND, res
        assert "lesson009.mp3" in res["reason"] and "lesson001.mp3" in res["reason"], res
        assert proto.validate("jsonrpc.app_start_task_result", res) is None
        assert runtime(server).active == "english_translation.live_translate"
        assert [n for n, _a in dev.tool_calls if n != "self.mp3.get_list"] == []


async def test_an_accepted_lesson_is_playing_when_the_answer_comes(server):
    async with WireDevice(server.ws.url, tools=player(["lesson001.mp3"]), page_limit=10) as dev:
        await ready(dev)
        r = await dev.start_task("english_learning", "repeater", "schedule", {"name": "lesson001.mp3", "repeat": 2})
        assert r["result"]["accepted"] is True and r["result"]["interaction_mode"] == "PLAY_AUDIO"
        # the play call was answered before the result was sent
        assert ("self.mp3.play", {"name": "lesson001.mp3", "repeat": 2}) in dev.tool_calls
        assert runtime(server).active == "english_learning.repeater"


async def test_a_failing_device_skill_is_refused_and_holds_no_priority(server):
    tools = player(["lesson001.mp3"], play_error="the SD card cannot be read")
    async with WireDevice(server.ws.url, tools=tools, page_limit=10) as dev:
        await ready(dev)
        r = await dev.start_task("english_learning", "repeater", "mqtt_immediate", {"name": "lesson001.mp3"})
        res = r["result"]
        assert res["accepted"] is False and res["code"] == proto.TASK_SKILL_FAILED, res
        assert "self.mp3.play" in res["reason"] and "cannot be read" in res["reason"], res
        assert res["active_app_id"] == "chat" and runtime(server).active == "chat.conversation"
        assert runtime(server).source == proto.SOURCE_DEFAULT_CHAT
        # the child's own request is not refused by a parents' task that never started
        r = await dev.start_task("english_translation", "live_translate", "voice")
        assert r["result"]["accepted"] is True


async def test_a_device_whose_tools_come_late_still_gets_its_lesson(start_server):
    # An alarm-woken board asks for its lesson right after hello, while its
    # tool list is still on the way: the runtime waits for the list.
    server = await start_server(server_config(None, apps={"opener_lines": {"zh": [], "en": []}}))
    async with WireDevice(server.ws.url, tools=player(["lesson001.mp3"]), page_limit=1) as dev:
        await dev.hello()
        r = await dev.start_task("english_learning", "repeater", "schedule", {"name": "lesson001.mp3"})
        assert r["result"]["accepted"] is True, r
        assert any(n == "self.mp3.play" for n, _a in dev.tool_calls)
