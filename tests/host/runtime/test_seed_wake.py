"""A user wake word (listen detect) during translation, over the real
WebSocket with the real translate MCP process: a translation the child
started by voice returns to chat.conversation, as a voice-started lesson
does; one started by the parents (MQTT) or by an alarm keeps translating."""
import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice

OPENERS = {"opener_lines": {"zh": ["你好呀！"], "en": ["Hi!"]}}


async def test_wake_word_ends_a_voice_started_translation(start_server, fake_llm, translate_llm):
    fake_llm.reply("😊 好呀，我们聊恐龙吧！")
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS), with_mcp=True)
    async with WireDevice(server.ws.url, tools={}, mcp=False) as dev:
        await dev.hello()
        await dev.wait_json("tts", state="stop", timeout=15)
        runtime = next(iter(server.services.sessions)).runtime
        r = await dev.start_task("english_translation", "live_translate", "voice")
        assert r["result"]["accepted"]
        await dev.detect("你好小智")
        await dev.wait_for(lambda: runtime.active == "chat.conversation", timeout=10)
        # Chat again: the child's words go to the chat model, not the translator.
        await dev.detect("我喜欢恐龙")
        await dev.wait_for(lambda: "好呀，我们聊恐龙吧！" in dev.texts(), timeout=15)
        assert fake_llm.requests[-1].messages[-1]["content"] == "我喜欢恐龙"
        assert translate_llm.requests == []


@pytest.mark.parametrize("source", ["mqtt_immediate", "schedule"])
async def test_wake_word_keeps_a_parents_or_alarm_translation(start_server, fake_llm, translate_llm, source):
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS), with_mcp=True)
    async with WireDevice(server.ws.url, tools={}, mcp=False) as dev:
        await dev.hello()
        await dev.wait_json("tts", state="stop", timeout=15)
        runtime = next(iter(server.services.sessions)).runtime
        r = await dev.start_task("english_translation", "live_translate", source)
        assert r["result"]["accepted"]
        await dev.detect("你好小智")
        await dev.wait_for(lambda: ("chat.conversation", "voice", "refuse")
                           in [(k, s, v) for _t, k, s, v in runtime.history], timeout=10)
        # Still translating, for the parents' task.
        translate_llm.reply("I like dinosaurs.")
        await dev.detect("我喜欢恐龙")
        await dev.wait_for(lambda: "I like dinosaurs." in dev.texts(), timeout=15)
        assert runtime.active == "english_translation.live_translate" and runtime.source == source
        assert fake_llm.requests == []
