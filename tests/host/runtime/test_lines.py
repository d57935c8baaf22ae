"""Every spoken line comes from data/lines.json; an operator's file (config
`lines.file`) changes one line, heard over the WebSocket, and a bad file
stops the server at start with a message naming the file and the key."""
import json

import pytest

from testkit.fake_llm import Turn
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.services import Services
from xiaozhi_server.text.lines import Lines, LinesError

QUIET = {"opener_lines": {"zh": [], "en": []}}


async def test_an_operators_line_is_heard_over_the_wire(tmp_path, start_server, fake_llm):
    mine = tmp_path / "lines.json"
    mine.write_text(json.dumps({"farewell": {"en": "See you tomorrow, little star!"}}), encoding="utf-8")
    cfg = server_config(fake_llm.base_url, apps=QUIET, lines={"file": str(mine)})
    server = await start_server(cfg)
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("bye bye")
        await dev.wait_json("goodbye", timeout=15)
        assert "See you tomorrow, little star!" in dev.texts()
    # the other language of that line, and every other line, keep the defaults
    lines = Lines.load(str(mine))
    assert lines.get("farewell", "zh") == Lines.load().get("farewell", "zh")
    assert lines.get("greeting", "en") == Lines.load().get("greeting", "en")


async def test_a_task_line_from_the_lines_file_is_spoken(tmp_path, start_server, fake_llm):
    mine = tmp_path / "lines.json"
    mine.write_text(json.dumps({"task.chat.conversation.switched": {"zh": "又可以聊天啦！", "en": "Chat time again!"}}), encoding="utf-8")
    fake_llm.answer("chat", Turn(tool_calls=[("switch_app", {"app_id": "chat"})]))
    fake_llm.answer("聊天", Turn(tool_calls=[("switch_app", {"app_id": "chat"})]))
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET, lines={"file": str(mine)}))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        # In the language of the child's words, whatever the server's starting language (zh).
        await dev.detect("let's just chat")
        await dev.wait_for(lambda: "Chat time again!" in dev.texts(), timeout=15)
        await dev.detect("我们聊天吧")
        await dev.wait_for(lambda: "又可以聊天啦！" in dev.texts(), timeout=15)


@pytest.mark.parametrize("content,named", [
    ("{not json", "not valid JSON"),
    (json.dumps({"farewel": {"en": "Bye"}}), "'farewel' is not a line the server speaks"),
    (json.dumps({"farewell": {"en": 3}}), "farewell.en must be a text"),
    (json.dumps(["farewell"]), "must hold an object"),
])
def test_a_bad_operator_file_stops_the_start_naming_it(tmp_path, content, named):
    mine = tmp_path / "lines.json"
    mine.write_text(content, encoding="utf-8")
    with pytest.raises(LinesError, match=named) as e:
        Services(server_config(None, lines={"file": str(mine)}))
    assert str(mine) in str(e.value)


def test_a_missing_operator_file_is_named():
    with pytest.raises(LinesError, match="cannot read the lines file /nowhere/lines.json"):
        Lines.load("/nowhere/lines.json")


def test_a_lines_file_setting_that_is_not_a_path_is_refused():
    with pytest.raises(LinesError, match="lines.file must be the path of a JSON file"):
        Services(server_config(None, lines={"file": 3}))
