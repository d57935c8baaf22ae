"""The three apps over the real WebSocket: chat speaks first and invites
once more, translation never reaches the chat LLM, lessons go to the
device's player, and tool policies are enforced."""
import asyncio
import json

from testkit.server import server_config
from testkit.wire_device import WireDevice

PLAYER = {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
          "self.mp3.stop": lambda a: {"stopped": True},
          "self.mp3.get_list": lambda a: {"files": ["lesson001.mp3", "lesson002.mp3"]},
          "self.mp3.get_status": lambda a: {"state": "playing", "repeat_left": 2},
          "self.power_off": lambda a: {"accepted": True},
          "self.camera.take_photo": lambda a: "photo taken",
          "self.get_device_status": lambda a: {"audio_speaker": {"volume": 50}}}

OPENERS = {"opener_lines": {"zh": ["你好呀，我们来聊天吧！"], "en": ["Hi! Let's chat."]},
           "reinvite_lines": {"zh": ["你还在吗？"], "en": ["Still there?"]}}


def session_of(server):
    return next(iter(server.services.sessions))


def offered(server):
    s = session_of(server)
    return sorted(d["function"]["name"] for d in s.tools.declarations(s.dialogue.tool_policy))


async def connect(server, **kw):
    dev = WireDevice(server.ws.url, tools=PLAYER, page_limit=10, **kw)
    await dev.connect()
    await dev.hello()
    return dev


async def test_opener_before_the_child_speaks_then_one_reinvite_then_quiet(start_server):
    cfg = server_config(None, apps=dict(OPENERS, reinvite_after_s=0.8, max_reinvites=1))
    server = await start_server(cfg)
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)
        assert dev.texts() == ["你好呀，我们来聊天吧！"]
        assert dev.audio, "the opener is spoken"
        await dev.wait_for(lambda: "你还在吗？" in dev.texts(), timeout=10)
        await asyncio.sleep(2.5)
        assert dev.texts() == ["你好呀，我们来聊天吧！", "你还在吗？"], "no nagging loop"
    finally:
        await dev.close()


async def test_child_speaking_stops_the_reinvite(start_server, fake_llm):
    fake_llm.reply("😊 Dinosaurs are great!")
    cfg = server_config(fake_llm.base_url, apps=dict(OPENERS, reinvite_after_s=1.0))
    server = await start_server(cfg)
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)
        await dev.detect("I like dinosaurs")
        await dev.wait_for(lambda: "Dinosaurs are great!" in dev.texts(), timeout=15)
        await asyncio.sleep(2.0)
        assert "你还在吗？" not in dev.texts()
    finally:
        await dev.close()


async def test_translation_app(start_server, fake_llm, translate_llm):
    fake_llm.reply_tool_calls(("switch_app", {"app_id": "english_translation"}))
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS), with_mcp=True)
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)           # the opener
        assert "weather" not in " ".join(offered(server))
        await dev.detect("我们来翻译吧")
        await dev.wait_for(lambda: session_of(server).runtime.mode == "TRANSLATION", timeout=15)
        assert offered(server) == ["switch_app", "translate"]
        chat_requests = len(fake_llm.requests)
        for said, translated in (("今天天气很好", "The weather is nice today."),
                                 ("I love my cat", "我爱我的猫。"),
                                 ("tell me a joke", "给我讲个笑话。")):
            translate_llm.reply(translated)
            await dev.detect(said)
            await dev.wait_for(lambda: translated in dev.texts(), timeout=15)
            sent = translate_llm.requests[-1].messages
            assert sent[-1]["content"] == said
        assert len(fake_llm.requests) == chat_requests, "the chat LLM was asked while translating"
        assert len(translate_llm.requests) == 3
        await dev.detect("退出翻译")
        await dev.wait_for(lambda: session_of(server).runtime.mode == "CHAT", timeout=10)
        assert "self_get_device_status" in offered(server) and "start_repeater" in offered(server)
        assert len(translate_llm.requests) == 3, "the exit phrase was not translated"
    finally:
        await dev.close()


async def test_invalid_app_id_is_refused_and_the_app_stays(start_server, fake_llm):
    fake_llm.reply_tool_calls(("switch_app", {"app_id": "weather_app"}))
    fake_llm.reply("😕 I can't open that.")
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    dev = await connect(server)
    try:
        await dev.detect("open the weather app")
        await dev.wait_for(lambda: "I can't open that." in dev.texts(), timeout=15)
        tool_msg = [m for m in fake_llm.requests[1].messages if m["role"] == "tool"][0]
        assert "unknown app" in tool_msg["content"]
        assert session_of(server).runtime.active == "chat.conversation"
    finally:
        await dev.close()


async def test_asking_for_the_app_already_running_goes_on_without_a_second_opener(start_server, fake_llm):
    fake_llm.reply_tool_calls(("switch_app", {"app_id": "chat"}))
    fake_llm.reply("🙂 Why did the cat sit on the computer? To keep an eye on the mouse!")
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)           # the opener
        await dev.detect("我们来聊天吧")
        await dev.wait_for(lambda: "好的，我们来聊天吧！" in dev.texts(), timeout=15)
        await dev.wait_json("tts", state="stop", since=dev.json[-1][0], timeout=15)
        await dev.detect("tell me a joke")
        await dev.wait_for(lambda: any("mouse" in t for t in dev.texts()), timeout=15)
        said = dev.texts()
        assert said == ["你好呀，我们来聊天吧！", "好的，我们来聊天吧！", "Why did the cat sit on the computer?",
                        "To keep an eye on the mouse!"], "one opener, then the switch's line, then the answer"
        assert session_of(server).runtime.active == "chat.conversation"
    finally:
        await dev.close()


async def test_start_repeater_plays_on_the_device(start_server, fake_llm):
    fake_llm.reply_tool_calls(("start_repeater", {"name": "lesson001.mp3", "repeat": 3, "power_off_after": True}))
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    dev = await connect(server)
    try:
        await dev.detect("repeat lesson001 three times, then power off")
        await dev.wait_for(lambda: any(n == "self.mp3.play" for n, _a in dev.tool_calls), timeout=15)
        play = [a for n, a in dev.tool_calls if n == "self.mp3.play"]
        assert play == [{"name": "lesson001.mp3", "repeat": 3, "power_off_after": True}]
        # the line was spoken before the lesson started, and no chat turn followed
        t_play = next(t for t, m in dev.json if m.get("type") == "mcp"
                      and m["payload"].get("params", {}).get("name") == "self.mp3.play")
        assert any("lesson001" in x for x in dev.texts())
        assert dev.find("tts", state="stop")[0] < t_play
        assert len(fake_llm.requests) == 1
        assert session_of(server).runtime.mode == "PLAY_AUDIO"
        assert not any(n in ("play_music", "self.music.play") for n, _a in dev.tool_calls)
    finally:
        await dev.close()


async def test_missing_lesson_is_a_spoken_error_and_chat_stays(start_server, fake_llm):
    fake_llm.reply_tool_calls(("start_repeater", {"name": "lesson009.mp3", "repeat": 2}))
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    dev = await connect(server)
    try:
        await dev.detect("play lesson nine twice")
        await dev.wait_for(lambda: any("lesson009" in x for x in dev.texts()), timeout=15)
        assert "self.mp3.play" not in [n for n, _a in dev.tool_calls]
        assert session_of(server).runtime.active == "chat.conversation"
    finally:
        await dev.close()


async def test_wake_word_in_play_audio_returns_to_chat_unless_an_alarm_task_runs(start_server, fake_llm):
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS))
    dev = await connect(server)
    try:
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        r = await dev.start_task("english_learning", "repeater", "voice", {"name": "lesson001.mp3"})
        assert r["result"]["accepted"]
        await dev.detect("你好小智")
        await dev.wait_for(lambda: session_of(server).runtime.active == "chat.conversation", timeout=10)
        r = await dev.start_task("english_learning", "repeater", "schedule", {"name": "lesson002.mp3"})
        assert r["result"]["accepted"]
        await dev.detect("你好小智")
        await asyncio.sleep(0.5)
        assert session_of(server).runtime.active == "english_learning.repeater", "an alarm task is not reset"
    finally:
        await dev.close()


async def test_tool_outside_the_allowlist_is_never_executed(start_server, fake_llm, tmp_path):
    apps = json.load(open("server/xiaozhi_server/data/apps.json"))
    apps["apps"].append({"id": "quiz", "title": "Quiz", "default_task": "ask", "tasks": [{
        "id": "ask", "title": "Ask", "interaction_mode": "CHAT", "skills": [], "tool_policy": "allowlist",
        "tools": ["switch_app", "self.get_device_status"], "system_prompt_mode": "agent", "on_finish": "stay"}]})
    path = tmp_path / "apps.json"
    path.write_text(json.dumps(apps))
    fake_llm.reply_tool_calls(("self_mp3_play", {"name": "lesson001.mp3"}))
    fake_llm.reply("🙂 I can't play lessons here.")
    server = await start_server(server_config(fake_llm.base_url, apps=dict(OPENERS, registry=str(path))))
    dev = await connect(server)
    try:
        await dev.wait_for(lambda: dev.list_cursors, timeout=5)
        r = await dev.start_task("quiz", "ask", "voice")
        assert r["result"]["accepted"]
        assert offered(server) == ["self_get_device_status", "switch_app"]
        await dev.detect("play lesson one")
        await dev.wait_for(lambda: "I can't play lessons here." in dev.texts(), timeout=15)
        assert "self.mp3.play" not in [n for n, _a in dev.tool_calls]
        assert set(fake_llm.requests[0].tools) == {"self_get_device_status", "switch_app"}
        tool_msg = [m for m in fake_llm.requests[1].messages if m["role"] == "tool"][0]
        assert "not available in the current app" in tool_msg["content"]
    finally:
        await dev.close()


async def test_without_a_model_the_opener_says_what_to_configure_not_a_chat_invitation(start_server):
    from xiaozhi_server.text.lines import Lines
    lines = Lines.load()
    server = await start_server(server_config(None, apps={"reinvite_after_s": 0.5}))
    dev = await connect(server)
    try:
        await dev.wait_json("tts", state="stop", timeout=15)
        said = dev.texts()
        assert said and said[0] in lines.choices("opener_no_model", "zh") + lines.choices("opener_no_model", "en")
        assert "var/server.yaml" in said[0]
        invitations = set(lines.choices("opener", "zh") + lines.choices("reinvite", "zh"))
        assert not invitations & set(said)
        assert server.services.sessions and all(s.runtime.proactive._timer is None for s in server.services.sessions)
    finally:
        await dev.close()
