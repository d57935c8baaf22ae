"""Seed plan §10.1: 「我们来聊天吧」 and 「聊会天吧」 both leave translation for
chat.conversation, as the ASR writes them (with marks, spaces, 儿), over
the real WebSocket with the real translate MCP process: the words are
never translated, and the translator still works in between."""
from testkit.server import server_config
from testkit.wire_device import WireDevice

OPENERS = {"opener_lines": {"zh": ["你好呀！"], "en": ["Hi!"]}}
SAID = ["我们来聊天吧", "聊会天吧", "聊会天吧。", "聊会儿天吧！", "那我们聊会天吧", "我们来 聊天吧"]


async def test_both_seed_phrases_return_from_translation_to_chat(start_server, fake_llm, translate_llm):
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS), with_mcp=True)
    async with WireDevice(server.ws.url, tools={}, mcp=False) as dev:
        await dev.hello()
        await dev.wait_json("tts", state="stop", timeout=15)       # the opener
        runtime = next(iter(server.services.sessions)).runtime
        for i, words in enumerate(SAID):
            r = await dev.start_task("english_translation", "live_translate", "voice")
            assert r["result"]["accepted"], r
            assert runtime.mode == "TRANSLATION"
            translated = "Translation %d." % i
            translate_llm.reply(translated)
            await dev.detect("你好")
            await dev.wait_for(lambda: translated in dev.texts(), timeout=15)
            asked = len(translate_llm.requests)
            await dev.detect(words)
            await dev.wait_for(lambda: runtime.active == "chat.conversation", timeout=10)
            assert len(translate_llm.requests) == asked, "%r was translated" % words
        assert fake_llm.requests == [], "the chat LLM was never needed"


async def test_a_long_sentence_that_quotes_the_phrase_is_translated(start_server, fake_llm, translate_llm):
    server = await start_server(server_config(fake_llm.base_url, apps=OPENERS), with_mcp=True)
    async with WireDevice(server.ws.url, tools={}, mcp=False) as dev:
        await dev.hello()
        await dev.wait_json("tts", state="stop", timeout=15)
        runtime = next(iter(server.services.sessions)).runtime
        r = await dev.start_task("english_translation", "live_translate", "voice")
        assert r["result"]["accepted"], r
        said = "昨天下午我跟妹妹说我们来聊天吧，然后我们一起聊了很久很久"
        assert "我们来聊天吧" in said and len(said) > 24
        translate_llm.reply("Yesterday afternoon I told my sister let's chat, and we talked for a long time.")
        await dev.detect(said)
        await dev.wait_for(lambda: any(t.startswith("Yesterday afternoon") for t in dev.texts()), timeout=15)
        assert translate_llm.requests[-1].messages[-1]["content"] == said
        assert runtime.mode == "TRANSLATION"
