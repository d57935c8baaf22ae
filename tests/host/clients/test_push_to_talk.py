"""The opener never talks over push to talk. Stock firmware and py-xiaozhi
mute their mic from tts start to tts stop, so an opener sent while the
button is held would cost the child their words. The opener waits until
the button is released, and is dropped if the child spoke: answering beats
greeting. A press with no words gets the opener after the release."""
import time

import pytest

from testkit import audio
from testkit.server import server_config

from outside import OutsideClient

OPENER = "你好呀，我是小智，想聊点什么？"
APPS = {"opener_lines": {"zh": [OPENER], "en": [OPENER]}, "reinvite_lines": {"zh": [], "en": []}}


@pytest.mark.parametrize("client", ["esp32_firmware", "py_xiaozhi"])
async def test_words_said_while_the_button_is_held_are_answered_and_the_opener_is_dropped(
        client, fake_llm, start_server):
    fake_llm.reply("🙂 Cats purr when they are happy.")
    server = await start_server(server_config(fake_llm.base_url, apps=APPS))
    speech = await audio.english_speech("Why do cats purr?")
    async with OutsideClient(server.ws.url, client, mutes_mic=True) as dev:
        frame_ms = dev.fx["messages"]["hello"]["audio_params"]["frame_duration"]
        await dev.hello()
        await dev.send("listen_start_manual")   # the button goes down right after the hello
        # a child takes a moment before speaking; meanwhile the device answers MCP
        await dev.speak(audio.silence(1500) + speech + audio.silence(300), frame_ms=frame_ms)
        released = time.monotonic()
        await dev.send("listen_stop")
        stt = await dev.wait_json("stt", timeout=30)
        assert "cats" in stt["text"].lower()
        await dev.wait_for(lambda: "purr when they are happy" in " ".join(dev.texts()), timeout=30)
        assert dev.muted_frames == 0, "the server spoke while the button was held"
        first_start, _ = dev.find("tts", state="start")
        assert first_start > released
        assert OPENER not in dev.texts()


async def test_a_press_without_words_gets_the_opener_after_the_release(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url, apps=APPS))
    async with OutsideClient(server.ws.url, "esp32_firmware", mutes_mic=True) as dev:
        await dev.hello()
        await dev.send("listen_start_manual")
        await dev.speak(audio.silence(2000))
        released = time.monotonic()
        await dev.send("listen_stop")
        await dev.wait_json("tts", state="stop", timeout=30)
        assert dev.texts() == [OPENER]
        assert dev.find("tts", state="start")[0] > released and dev.muted_frames == 0
        assert not dev.find("stt")
