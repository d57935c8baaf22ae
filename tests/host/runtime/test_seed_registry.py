"""The seed plan's own apps.json (phase-1 plan §2.2, copied verbatim into
data/seed_apps.json) loads as written and behaves like the shipped
registry: the same tasks, modes, tool policies, params and skills, checked
here directly and then over the real WebSocket with either file."""
import json

import pytest

from testkit import ROOT
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.runtime.registry import Registry, RegistryError

SEED = ROOT / "tests" / "host" / "runtime" / "data" / "seed_apps.json"
SHIPPED = ROOT / "server" / "xiaozhi_server" / "data" / "apps.json"
REGISTRIES = [pytest.param(str(SHIPPED), id="shipped"), pytest.param(str(SEED), id="seed")]
OPENERS = {"opener_lines": {"zh": ["你好呀，我们来聊天吧！"], "en": ["Hi! Let's chat."]}}
BOARD = {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
         "self.mp3.stop": lambda a: {"stopped": True},
         "self.mp3.get_list": lambda a: {"files": [{"name": "lesson001.mp3"}]},
         "self.mp3.get_status": lambda a: {"state": "playing", "repeat_left": 1},
         "self.power_off": lambda a: {"accepted": True},
         "self.get_device_status": lambda a: {"audio_speaker": {"volume": 50}}}


def seed():
    return json.loads(SEED.read_text(encoding="utf-8"))


def test_the_seed_example_is_the_seed_spelling():
    data = seed()
    assert data["default_app_id"] == "chat" and isinstance(data["apps"], dict)
    repeater = data["apps"]["english_learning"]["tasks"]["repeater"]
    assert repeater["skills"] == [{"name": "self.mp3.play", "args_from": ["name", "repeat", "power_off_after"]}]
    assert data["apps"]["english_translation"]["tasks"]["live_translate"]["skills"][0]["side"] == "server_mcp"


def test_seed_example_loads_with_the_shipped_behaviour():
    s, ours = Registry.load(str(SEED)), Registry.load()
    assert s.default().key == ours.default().key == "chat.conversation"
    assert s.apps["chat"].title == "聊天"
    for app in s.apps.values():
        for t in app.tasks.values():
            o = ours.find(t.app_id, t.id)
            assert (t.mode, t.policy(), t.prompt_mode, t.on_finish) == \
                (o.mode, o.policy(), o.prompt_mode, o.on_finish), t.key
            assert [x["name"] for x in t.skills] == [x["name"] for x in o.skills], t.key
            assert t.stop_skills == o.stop_skills and t.status_skill == o.status_skill, t.key
            assert t.lines == o.lines and t.prompt == o.prompt, t.key   # it says what ours says
    assert s.find("english_learning").key == "english_learning.repeater"
    assert s.find("english_translation").key == "english_translation.live_translate"
    assert s.find("chat").policy() is None
    assert s.find("english_translation").policy() == frozenset({"switch_app", "translate"})


@pytest.mark.parametrize("params", [
    {"name": "lesson001.mp3"},
    {"name": "lesson001.mp3", "repeat": 3, "power_off_after": True},
    {"repeat": 2},
    {"name": "lesson001.mp3", "repeat": 0},
    {"name": "lesson001.mp3", "repeat": "3"},
    {"name": "../boot.py"},
    {"name": "lesson001.mp3", "volume": 80},
])
def test_repeater_params_are_judged_alike(params):
    from xiaozhi_server import protocol as proto
    s, ours = Registry.load(str(SEED)), Registry.load()
    a = proto.validate_against(s.find("english_learning").params_schema, params, "params")
    b = proto.validate_against(ours.find("english_learning").params_schema, params, "params")
    assert a == b


def test_args_from_passes_the_named_params_that_were_given():
    from xiaozhi_server.runtime.registry import skill_args
    play = Registry.load(str(SEED)).find("english_learning").skills[0]
    assert skill_args(play, {"name": "a.mp3", "repeat": 2, "power_off_after": False}) == \
        {"name": "a.mp3", "repeat": 2, "power_off_after": False}
    assert skill_args(play, {"name": "a.mp3"}) == {"name": "a.mp3"}


def broken(edit):
    data = seed()
    edit(data)
    return data


@pytest.mark.parametrize("edit,named", [
    (lambda d: d["apps"]["english_learning"].__setitem__("mode", "KARAOKE"), "apps.english_learning.mode"),
    (lambda d: d["apps"]["english_translation"]["tasks"]["live_translate"]["skills"][0].__setitem__("side", "cloud"),
     "apps.english_translation.tasks.live_translate.skills[0].side"),
    (lambda d: d["apps"]["english_translation"].pop("tools"), "apps.english_translation: missing required field 'tools'"),
    (lambda d: d.__setitem__("default_app_id", "games"), "default_app_id 'games'"),
    (lambda d: d["apps"]["chat"].__setitem__("default_task", "nap"), "apps.chat.default_task 'nap'"),
    (lambda d: d["apps"].__setitem__("Games", d["apps"]["chat"]), "apps.Games"),
    (lambda d: d["apps"]["chat"].__setitem__("tasks", {}), "apps.chat.tasks"),
    (lambda d: d["apps"]["chat"]["tasks"]["conversation"].__setitem__("params_schema", {"patternProperties": {}}),
     "apps.chat.tasks.conversation.params_schema uses patternProperties"),
    (lambda d: d["apps"]["chat"].__setitem__("tool_polcy", "allowlist"), "unexpected field 'tool_polcy'"),
])
def test_bad_seed_registry_names_the_seed_field(edit, named):
    with pytest.raises(RegistryError) as e:
        Registry(broken(edit))
    assert named in str(e.value)


# ---- the same behaviour over the wire, with either file ----

def session_of(server):
    return next(iter(server.services.sessions))


def offered(server):
    s = session_of(server)
    return sorted(d["function"]["name"] for d in s.tools.declarations(s.dialogue.tool_policy))


async def connect(server):
    dev = WireDevice(server.ws.url, tools=BOARD, page_limit=10)
    await dev.connect()
    await dev.hello()
    return dev


@pytest.mark.parametrize("registry", REGISTRIES)
async def test_chat_first_then_the_repeater_gets_its_params(start_server, fake_llm, registry):
    fake_llm.reply_tool_calls(("start_repeater", {"name": "lesson001", "repeat": 3, "power_off_after": True}))
    server = await start_server(server_config(fake_llm.base_url, apps=dict(OPENERS, registry=registry)))
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)
        assert dev.texts() == ["你好呀，我们来聊天吧！"], "chat.conversation opens by itself"
        assert session_of(server).runtime.active == "chat.conversation"
        assert {"self_get_device_status", "start_repeater", "switch_app"} <= set(offered(server))
        await dev.detect("复读 lesson001 三遍然后关机")
        await dev.wait_for(lambda: any(n == "self.mp3.play" for n, _a in dev.tool_calls), timeout=15)
        assert [a for n, a in dev.tool_calls if n == "self.mp3.play"] == \
            [{"name": "lesson001.mp3", "repeat": 3, "power_off_after": True}]
        assert session_of(server).runtime.mode == "PLAY_AUDIO"
        assert offered(server) == ["self_mp3_get_list", "self_mp3_play", "self_mp3_stop", "self_power_off",
                                   "start_repeater", "switch_app"]
        # A request with a param the lesson does not take is refused, naming it.
        r = await dev.start_task("english_learning", "repeater", "mqtt_immediate",
                                 {"name": "lesson001.mp3", "volume": 80})
        assert "unexpected field 'volume'" in r["error"]["message"]
        # Back to chat by a wake word: the lesson's stop skill runs.
        await dev.detect("你好小智")
        await dev.wait_for(lambda: session_of(server).runtime.active == "chat.conversation", timeout=10)
        assert "self.mp3.stop" in [n for n, _a in dev.tool_calls]
    finally:
        await dev.close()


@pytest.mark.parametrize("registry", REGISTRIES)
async def test_translation_runs_the_translate_skill(start_server, fake_llm, translate_llm, registry):
    fake_llm.reply_tool_calls(("switch_app", {"app_id": "english_translation"}))
    server = await start_server(server_config(fake_llm.base_url, apps=dict(OPENERS, registry=registry)),
                                with_mcp=True)
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)
        await dev.detect("我们来翻译吧")
        await dev.wait_for(lambda: session_of(server).runtime.mode == "TRANSLATION", timeout=15)
        assert offered(server) == ["switch_app", "translate"]
        asked = len(fake_llm.requests)
        translate_llm.reply("The weather is nice today.")
        await dev.detect("今天天气很好")
        await dev.wait_for(lambda: "The weather is nice today." in dev.texts(), timeout=15)
        assert translate_llm.requests[-1].messages[-1]["content"] == "今天天气很好"
        assert len(fake_llm.requests) == asked, "the chat LLM was asked while translating"
    finally:
        await dev.close()
