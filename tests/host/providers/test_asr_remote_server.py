"""A remote recognizer configured the way an operator would, in the real
server: the device's Opus speech reaches a FunASR server (testkit's, over
its WebSocket protocol) after the first one configured is found dead, and
the words it hears are what the device is shown and the model is asked."""

from testkit import audio
from testkit.fake_funasr import FakeFunAsr
from testkit.local_net import unused_port
from testkit.server import server_config
from testkit.wire_device import WireDevice


def dead_url():
    return "ws://127.0.0.1:%d" % unused_port()


async def test_speech_heard_by_the_second_funasr_when_the_first_is_down(fake_llm, start_server):
    fake_llm.reply("🙂 明天是晴天。")
    # Every connection hears the same words: a pause inside the phrase may
    # send the listener's joined utterance to the server a second time.
    with FakeFunAsr(default_text="明天天气怎么样？") as funasr:
        cfg = server_config(fake_llm.base_url,
                            asr={"type": "fallback", "providers": [
                                {"type": "funasr", "name": "lan-funasr", "url": dead_url()},
                                {"type": "funasr", "name": "backup-funasr", "url": funasr.url}]},
                            tts={"type": "espeak", "voice": "cmn-latn-pinyin"})
        server = await start_server(cfg)
        async with WireDevice(server.ws.url) as dev:
            await dev.hello()
            await dev.listen_start("auto")
            await dev.say_pcm(audio.speech("ming tian tian qi zen me yang"), pace=0.02)
            stt = await dev.wait_json("stt", timeout=30)
            assert stt["text"] == "明天天气怎么样？"
            await dev.wait_json("tts", state="stop", timeout=30)
        assert funasr.connections and bytes(funasr.connections[0].audio)   # the utterance went to it
        assert funasr.connections[0].first["mode"] == "2pass"
    assert fake_llm.requests[0].messages[-1] == {"role": "user", "content": "明天天气怎么样？"}
