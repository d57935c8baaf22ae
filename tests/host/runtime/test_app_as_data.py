"""A new app is one apps.json entry: no code names it, yet over the real
WebSocket the chat LLM can switch to it, its line is spoken, and its own
prompt reaches the LLM. Both spellings of the registry (ours and the
seed plan's) take such an entry."""
import json
import pathlib
import time

import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.runtime.registry import DEFAULT_PATH, Registry, RegistryError

SEED = pathlib.Path(__file__).parent / "data" / "seed_apps.json"
PROMPT = "Tell one short bedtime story about the animal the child names, in at most five sentences."
LINES = {"switched": {"zh": "好的，我们来讲故事吧！", "en": "Okay, story time!"}}
OPENERS = {"opener_lines": {"zh": ["你好呀！"], "en": ["Hi!"]}, "reinvite_lines": {"zh": [], "en": []}}


def ours_with_story(path):
    data = json.loads(pathlib.Path(DEFAULT_PATH).read_text(encoding="utf-8"))
    data["apps"].append({
        "id": "story_time", "title": "Story time", "description": "Bedtime stories.",
        "default_task": "bedtime_story",
        "tasks": [{"id": "bedtime_story", "title": "Bedtime story", "interaction_mode": "CHAT", "skills": [],
                   "tool_policy": "inherit_agent", "system_prompt_mode": "agent", "system_prompt": PROMPT,
                   "lines": LINES, "on_finish": "stay"}]})
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def seed_with_story(path):
    # The seed's spelling: prompt and line on the app, the task inherits them.
    data = json.loads(SEED.read_text(encoding="utf-8"))
    data["apps"]["story_time"] = {"name": "讲故事", "description": "Bedtime stories.", "mode": "CHAT",
                                  "tool_policy": "inherit_agent", "system_prompt_mode": "agent",
                                  "system_prompt": PROMPT, "lines": LINES,
                                  "tasks": {"bedtime_story": {"skills": []}}}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def switch_app_enum(request):
    for t in request.body["tools"]:
        if t["function"]["name"] == "switch_app":
            return t["function"]["parameters"]["properties"]["app_id"]["enum"]
    return None


@pytest.mark.parametrize("write", [ours_with_story, seed_with_story], ids=["ours", "seed"])
async def test_an_app_added_only_in_apps_json_starts_speaks_and_prompts(start_server, fake_llm, tmp_path, write):
    registry = tmp_path / "apps.json"
    write(registry)
    fake_llm.reply_tool_calls(("switch_app", {"app_id": "story_time"}))
    fake_llm.reply("😊 从前有一只小兔子，它每天晚上都看星星。")
    server = await start_server(server_config(fake_llm.base_url, apps=dict(OPENERS, registry=str(registry))))
    dev = WireDevice(server.ws.url)
    await dev.connect()
    await dev.hello()
    try:
        await dev.wait_json("tts", state="stop", timeout=15)                  # chat's opener
        asked = time.monotonic()
        await dev.detect("给我讲个故事吧")
        await dev.wait_for(lambda: "好的，我们来讲故事吧！" in dev.texts(), timeout=15)
        await dev.wait_json("tts", state="stop", since=asked, timeout=15)  # heard to the end
        first = fake_llm.requests[0]
        assert "story_time" in switch_app_enum(first), "the LLM is offered the new app"
        assert PROMPT not in first.messages[0]["content"], "chat does not carry the story prompt"

        await dev.detect("讲小兔子的故事")
        await dev.wait_for(lambda: "从前有一只小兔子，它每天晚上都看星星。" in "".join(dev.texts()), timeout=15)
        system = fake_llm.requests[-1].messages[0]
        assert system["role"] == "system" and system["content"].endswith(PROMPT)
        assert len(fake_llm.requests) == 2 and fake_llm.pending == 0
    finally:
        await dev.close()


def test_a_line_in_an_unknown_event_or_a_bad_prompt_is_refused_naming_the_field(tmp_path):
    registry = tmp_path / "apps.json"
    ours_with_story(registry)
    data = json.loads(registry.read_text(encoding="utf-8"))
    data["apps"][-1]["tasks"][0]["lines"] = {"greeting": {"zh": "你好"}}
    with pytest.raises(RegistryError, match=r"apps\[3\]\.tasks\[0\]\.lines"):
        Registry(data)
    data["apps"][-1]["tasks"][0]["lines"] = LINES
    data["apps"][-1]["tasks"][0]["system_prompt"] = ""
    with pytest.raises(RegistryError, match=r"apps\[3\]\.tasks\[0\]\.system_prompt"):
        Registry(data)
