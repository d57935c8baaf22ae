"""How sessions begin and end: push-to-talk, exit phrases, idle goodbye,
a TTS that fails (the words still arrive), and a reconnect that finds the
device's tools again."""
import asyncio

from testkit import audio
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.providers.tts.base import TtsError, TtsProvider
from xiaozhi_server.services import Services

QUIET = {"opener_lines": {"zh": [], "en": []}}


async def test_push_to_talk_ends_the_turn_on_listen_stop(fake_llm, start_server):
    from xiaozhi_server import protocol as proto
    fake_llm.reply("🙂 Here is a story about a little dog.")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    speech = await audio.english_speech("Please tell me a story about a dog.")
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("manual")
        await dev.say_pcm(speech, pace=0.01, tail_ms=2500)   # a long silence: manual mode waits anyway
        await asyncio.sleep(0.5)
        assert not dev.find("stt"), "manual mode must not end the turn on silence"
        await dev.send_json(proto.listen(proto.LISTEN_STOP, session_id=dev.session_id))
        stt = await dev.wait_json("stt", timeout=30)
        assert "story" in stt["text"].lower() and "dog" in stt["text"].lower()
        await dev.wait_json("tts", state="stop", timeout=30)


async def test_exit_phrase_says_goodbye_and_closes(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("bye bye")
        await dev.wait_json("goodbye", timeout=20)
        assert dev.audio, "the goodbye is spoken before the channel closes"
        code, _ = await dev.wait_closed()
        assert code == 1000
    assert fake_llm.requests == []


async def test_idle_session_says_goodbye(fake_llm, start_server):
    cfg = server_config(fake_llm.base_url, apps=QUIET, session={"idle_timeout_s": 1.0})
    server = await start_server(cfg)
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        msg = await dev.wait_json("goodbye", timeout=20)
        assert msg["reason"] == "idle"
        assert dev.texts(), "a spoken line comes first"


class BrokenTts(TtsProvider):
    async def synthesize(self, text, voice=None):
        raise TtsError("synthesizer is down")


async def test_tts_failure_still_sends_the_words(fake_llm, start_server):
    from xiaozhi_server.providers.registry import create
    fake_llm.reply("😊 The moon is far away. It takes days to get there.")
    cfg = server_config(fake_llm.base_url, apps=QUIET)
    tts = create("tts", {"type": "fallback", "providers": [BrokenTts({"type": "broken"})]})
    server = await start_server(cfg, services=Services(cfg, tts=tts))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("how far is the moon")
        await dev.wait_json("tts", state="stop", timeout=20)
        assert " ".join(dev.texts()) == "The moon is far away. It takes days to get there."
        assert dev.audio == []


async def test_reconnect_lists_the_device_tools_again(fake_llm, start_server):
    tools = {"self.get_device_status": lambda a: {"audio_speaker": {"volume": 10}},
             "self.audio_speaker.set_volume": lambda a: True}
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    for _ in range(2):
        async with WireDevice(server.ws.url, tools=tools, page_limit=1) as dev:
            await dev.hello()
            await dev.wait_for(lambda: len(dev.list_cursors) == 2, timeout=5)
            session = next(iter(server.services.sessions))
            await asyncio.sleep(0.1)
            assert {"self.get_device_status", "self.audio_speaker.set_volume"} <= set(session.tools.names())
