"""Words right after a wake word are answered, never swallowed by a greeting.

Stock firmware (v2.4.2, auto mode) wakes like this: the buffered packets of
the wake word itself, `listen detect` with the wake word, `listen start`,
then live audio; from tts start to tts stop its mic is muted. So the server
greets only if the child says nothing more, and the wake word's own audio
is never taken for the child's words."""
import numpy as np

from testkit import audio
from testkit.server import server_config
from testkit.wire_device import opus_frames

from outside import QUIET, OutsideClient

GREETING = "我在呢，你说。"   # the session's answer to a bare Chinese wake word


def wake_word_packets():
    """The wake word as the firmware buffered it: it detects the word as it
    ends, so the packets stop right after the last syllable."""
    pcm = audio.speech("ni3 hao3 xiao3 zhi4", voice="cmn-latn-pinyin")
    x = np.frombuffer(pcm, dtype="<i2")
    end = int(np.nonzero(np.abs(x) > 500)[0][-1]) + 16000 * 60 // 1000
    return opus_frames(x[:end].tobytes())


async def test_words_right_after_the_wake_word_are_answered_not_greeted(fake_llm, start_server):
    fake_llm.reply("🙂 Cats purr when they are happy.")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    speech = await audio.english_speech("Why do cats purr?")
    async with OutsideClient(server.ws.url, "esp32_firmware", mutes_mic=True) as dev:
        await dev.hello()
        await dev.send_packets(wake_word_packets())
        await dev.send("wake_detect", TEXT="你好小智")
        await dev.send("listen_start_auto")
        await dev.speak(speech)
        assert dev.muted_frames == 0, "the server spoke over the words after the wake word"
        # The answer may start within this silence (the mic is muted then): that is the reply, not a greeting.
        await dev.speak(audio.silence(1200))
        stt = await dev.wait_json("stt", timeout=30)
        assert "cats" in stt["text"].lower()
        await dev.wait_for(lambda: "purr when they are happy" in " ".join(dev.texts()), timeout=30)
        assert GREETING not in dev.texts()
        assert [m["text"] for _t, m in dev.json if m["type"] == "stt"] == [stt["text"]]


async def test_a_wake_word_alone_is_greeted_and_its_audio_is_not_taken_for_words(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    async with OutsideClient(server.ws.url, "esp32_firmware", mutes_mic=True) as dev:
        await dev.hello()
        # listening from an earlier turn, so the wake word's packets do reach the listener
        await dev.send("listen_start_auto")
        await dev.speak(audio.silence(600))
        await dev.send_packets(wake_word_packets())
        await dev.send("wake_detect", TEXT="你好小智")
        await dev.send("listen_start_auto")
        await dev.speak(audio.silence(2500))
        await dev.wait_json("tts", state="stop", timeout=30)
        assert dev.texts() == [GREETING]
        assert not dev.find("stt"), "the wake word itself was answered as words"
    assert fake_llm.requests == []
