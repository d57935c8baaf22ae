"""Leftovers of issue 26 in the App Runtime, over the wire: a lesson whose
status the device cannot report holds no priority, start_repeater reads
the card's list once, a goodbye is heard however ASR spells it, and a
registry whose default is not the board's chat.conversation is refused."""
import json

import pytest

from testkit import ROOT
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.runtime.registry import Registry, RegistryError

QUIET = {"opener_lines": {"zh": [], "en": []}}


def player(status):
    return {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
            "self.mp3.stop": lambda a: {"stopped": True},
            "self.mp3.get_list": lambda a: {"files": [{"name": "lesson001.mp3", "size": 1000}]},
            "self.mp3.get_status": status}


def broken_status(args):
    raise RuntimeError("player state unreadable")


def runtime(server):
    return next(iter(server.services.sessions)).runtime


async def test_a_status_skill_that_errors_gives_the_priority_back(start_server):
    server = await start_server(server_config(None, apps=QUIET))
    async with WireDevice(server.ws.url, tools=player(broken_status), page_limit=10) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        r = await dev.start_task("english_learning", "repeater", "mqtt_immediate", {"name": "lesson001.mp3"})
        assert r["result"]["accepted"] is True
        r = await dev.start_task("english_translation", "live_translate", "voice")
        assert r["result"]["accepted"] is True, r["result"]
        assert runtime(server).active == "english_translation.live_translate"


async def test_start_repeater_reads_the_lesson_list_once(start_server, fake_llm):
    fake_llm.reply_tool_calls(("start_repeater", {"name": "lesson001", "repeat": 2}))
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    playing = player(lambda a: {"state": "playing", "repeat_left": 1})
    async with WireDevice(server.ws.url, tools=playing, page_limit=10) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        await dev.detect("repeat lesson one twice")
        await dev.wait_for(lambda: any(n == "self.mp3.play" for n, _a in dev.tool_calls), timeout=15)
        assert [n for n, _a in dev.tool_calls].count("self.mp3.get_list") == 1, dev.tool_calls


@pytest.mark.parametrize("said", ["Good bye!", "再 见！", "Bye, bye."])
async def test_a_goodbye_is_heard_however_asr_spells_it(start_server, fake_llm, said):
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    async with WireDevice(server.ws.url, page_limit=10) as dev:
        await dev.hello()
        await dev.detect(said)
        await dev.wait_json("goodbye", timeout=15)
        assert fake_llm.requests == [], "a goodbye went to the chat LLM"


def test_the_default_app_must_be_the_boards_chat_conversation():
    data = json.loads((ROOT / "server" / "xiaozhi_server" / "data" / "apps.json").read_text(encoding="utf-8"))
    data["default_app"] = "english_translation"
    with pytest.raises(RegistryError, match=r"default_app 'english_translation'.*chat\.conversation"):
        Registry(data)
