"""Every outside client's own hello is answered (a bare one takes the
documented defaults), the server announces what it really sends down, and
what it cannot honour gets a clear alert instead of silence."""
import opuslib

from testkit import audio
from testkit.server import server_config
from xiaozhi_server import protocol as proto

from outside import QUIET, OutsideClient


async def test_browser_page_bare_hello_is_answered_and_its_first_words_get_a_spoken_reply(fake_llm, start_server):
    fake_llm.reply("😊 你好呀！今天想聊点什么呢？")
    server = await start_server(server_config(fake_llm.base_url))
    async with OutsideClient(server.ws.url, "browser_page") as page:
        hello = await page.hello()   # no version, transport or audio_params in it
        assert hello["transport"] == "websocket" and hello["session_id"]
        assert hello["audio_params"] == {"format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60}
        await page.send("wake_detect")
        await page.send("listen_start_auto")
        await page.wait_json("tts", state="stop", timeout=30)
        assert page.find("stt", text="嘿，你好呀")
        assert "今天想聊点什么呢" in "".join(page.texts())
        emotions = [m for _t, m in page.json if m["type"] == "llm"]
        assert emotions and all(m["emotion"] in proto.EMOTIONS for m in emotions)
        # The page decodes every packet at 16 kHz into 960-sample frames: 60 ms
        # frames are what it can play, whatever rate they were encoded at.
        dec = opuslib.Decoder(16000, 1)
        pcm = b"".join(dec.decode(p, 960) for _t, p in page.audio)
        assert len(pcm) == 2 * 960 * len(page.audio)
        assert audio.seconds(pcm, 16000) > 1.0 and audio.voiced_fraction(pcm, 16000) > 0.3
        assert page.closed is None, "the connection must stay open"


async def test_py_xiaozhi_20ms_frames_are_heard(fake_llm, start_server):
    fake_llm.reply("🙂 Cats purr when they are happy.")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    speech = await audio.english_speech("Why do cats purr?")
    async with OutsideClient(server.ws.url, "py_xiaozhi", mutes_mic=True) as client:
        hello = await client.hello()
        assert client.fx["messages"]["hello"]["audio_params"]["frame_duration"] == 20
        assert hello["audio_params"]["frame_duration"] == 60   # what it really gets, announced
        await client.send("listen_start_auto")
        await client.speak(speech + audio.silence(1000), frame_ms=20)
        stt = await client.wait_json("stt", timeout=30)
        assert "cats" in stt["text"].lower()
        await client.wait_for(lambda: "purr when they are happy" in " ".join(client.texts()), timeout=30)


async def test_sdk_asking_for_pcm_gets_a_hello_and_an_alert_with_an_emotion(fake_llm, start_server):
    fake_llm.reply("🙂 Hello!")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    async with OutsideClient(server.ws.url, "xiaozhi_sdk") as sdk:
        hello = await sdk.hello("hello_pcm")
        assert hello["audio_params"]["format"] == "opus"
        alert = await sdk.wait_json("alert", timeout=5)
        assert alert["emotion"] in proto.EMOTIONS and alert["status"]
        assert "pcm" in alert["message"] and "Opus" in alert["message"]
        # text still works
        await sdk.send("text", TEXT="hello")
        await sdk.wait_json("tts", state="stop", timeout=30)
        emotions = [m.get("emotion") for _t, m in sdk.json if m["type"] == "llm"]
        assert len(emotions) == 1 and emotions[0] in proto.EMOTIONS


async def test_stock_firmware_and_sdk_hellos_are_answered_at_once(start_server):
    server = await start_server(server_config(None, apps=QUIET))
    for client in ("esp32_firmware", "xiaozhi_sdk"):
        async with OutsideClient(server.ws.url, client) as dev:
            hello = await dev.hello(timeout=5)
            assert hello["audio_params"]["sample_rate"] == 24000
            assert not dev.find("alert")
