"""The Sening board's lesson list (seed plan §5: files[].name) over the real
WebSocket: the child asks for a lesson, the model calls start_repeater, the
server reads the board's list in the seed's shape and the board's
self.mp3.play receives the listed name."""
import json

import pytest

from testkit import ROOT
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.runtime.lessons import match_lesson

EXAMPLES = ROOT / "shared" / "protocol" / "examples" / "result_self.mp3.get_list"
SENING_LIST = json.loads((EXAMPLES / "ok-sening.json").read_text())   # {"files": [{"name": ...}, ...]}
OPENERS = {"opener_lines": {"zh": ["你好呀！"], "en": ["Hi!"]}}


def board(listing):
    return {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
            "self.mp3.stop": lambda a: {"stopped": True},
            "self.mp3.get_list": lambda a: listing,
            "self.mp3.get_status": lambda a: {"state": "playing", "repeat_left": 1},
            "self.power_off": lambda a: {"accepted": True}}


def runtime_of(server):
    return next(iter(server.services.sessions)).runtime


# (what the model wrote, the card's file): "lesson one" as a model writes it for lesson001.mp3
# (seen on make run: lesson001 asked of a card holding lesson1.mp3 was "not found").
@pytest.mark.parametrize("named, played", [("lesson002", "lesson002.mp3"), ("Lesson one", "lesson001.mp3")])
async def test_lesson_named_by_the_child_plays_from_the_sening_list(start_server, fake_llm, named, played):
    assert isinstance(SENING_LIST["files"][0], dict)
    fake_llm.reply_tool_calls(("start_repeater", {"name": named, "repeat": 2}))
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    async with WireDevice(server.ws.url, tools=board(SENING_LIST), page_limit=10) as dev:
        await dev.hello()
        await dev.detect("复读 %s 两遍" % named)
        await dev.wait_for(lambda: any(n == "self.mp3.play" for n, _a in dev.tool_calls), timeout=15)
        assert [a for n, a in dev.tool_calls if n == "self.mp3.play"] == \
            [{"name": played, "repeat": 2, "power_off_after": False}]
        assert [n for n, _a in dev.tool_calls].index("self.mp3.get_list") < \
            [n for n, _a in dev.tool_calls].index("self.mp3.play")
        assert any(played.removesuffix(".mp3") in x for x in dev.texts())
        assert runtime_of(server).active == "english_learning.repeater"


async def test_missing_lesson_names_what_the_sening_card_holds(start_server, fake_llm):
    fake_llm.reply_tool_calls(("start_repeater", {"name": "lesson009.mp3"}))
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    async with WireDevice(server.ws.url, tools=board(SENING_LIST), page_limit=10) as dev:
        await dev.hello()
        await dev.detect("play lesson nine")
        await dev.wait_for(lambda: any("lesson009" in x for x in dev.texts()), timeout=15)
        assert "self.mp3.play" not in [n for n, _a in dev.tool_calls]
        assert runtime_of(server).active == "chat.conversation"
        # What the model is told: the names on the card, not the objects.
        history = runtime_of(server).session.dialogue.history
        tool_lines = [m["content"] for m in history if m["role"] == "tool"]
        assert tool_lines == ["error: no lesson named lesson009.mp3; the card has: lesson001.mp3, lesson002.mp3"]


def test_a_lesson_name_matches_one_file_by_its_words_and_numbers_or_none():
    files = ["lesson1.mp3", "Lesson12.mp3", "story_three.mp3", "第一课.mp3", "song2.mp3", "song02b.mp3"]
    assert [match_lesson(n, files) for n in ("lesson001", "LESSON_1", "lesson twelve", "story 3", "第1课")] == \
        ["lesson1.mp3", "lesson1.mp3", "Lesson12.mp3", "story_three.mp3", "第一课.mp3"]
    assert match_lesson("lesson3", files) is None and match_lesson("lesson", files) is None
    assert match_lesson("song 2", files + ["Song_2.mp3"]) is None     # two files it could mean: neither
