"""The Chinese cloud pair configured the way an operator would, in the real
server: the device's Opus speech is heard by Doubao's streaming ASR
(testkit's Volcengine server, big-model path) and the reply is spoken by an
Edge voice (testkit's read-aloud server), decoded from its MP3 and sent to
the device as Opus."""
import edge_tts.communicate

from testkit import audio
from testkit.fake_edge_tts import TONE_HZ, FakeEdgeTts
from testkit.fake_volcengine import FakeVolcengine
from testkit.server import server_config
from testkit.wire_device import WireDevice, decode_down


async def test_doubao_hears_and_edge_speaks(fake_llm, start_server, monkeypatch):
    fake_llm.reply("🙂 明天是晴天。")
    with FakeVolcengine(token="tok", access_key="tok", default_text="明天天气怎么样？") as volc, \
            FakeEdgeTts(seconds=1.0) as edge:
        monkeypatch.setattr(edge_tts.communicate, "WSS_URL", edge.endpoint)
        cfg = server_config(fake_llm.base_url,
                            asr={"type": "volcengine", "url": volc.url + "/api/v3/sauc/bigmodel", "appid": "1",
                                 "token": "tok", "resource_id": "volc.bigasr.sauc.duration"},
                            tts={"type": "edge", "voice": "zh-CN-XiaoxiaoNeural"})
        server = await start_server(cfg)
        async with WireDevice(server.ws.url) as dev:
            await dev.hello()
            await dev.listen_start("auto")
            await dev.say_pcm(audio.speech("ming tian tian qi zen me yang"), pace=0.02)
            stt = await dev.wait_json("stt", timeout=30)
            assert stt["text"] == "明天天气怎么样？"
            # The chat's opener may come first on a busy machine: the answer is the sentence after it.
            start = await dev.wait_json("tts", state="sentence_start", text="明天是晴天。", timeout=30)
            said_at = max(t for t, m in dev.json if m is start)
            await dev.wait_json("tts", state="stop", since=said_at, timeout=30)
            pcm = decode_down(dev.audio_between(said_at))
        assert audio.seconds(pcm, 24000) >= 0.9 and abs(audio.dominant_hz(pcm, 24000) - TONE_HZ) < 10
        assert edge.connections[-1].text == "明天是晴天。"
        assert edge.connections[-1].voice.endswith("(zh-CN, XiaoxiaoNeural)")
        assert bytes(volc.connections[0].audio)   # the utterance went to the recognizer
    assert fake_llm.requests[0].messages[-1] == {"role": "user", "content": "明天天气怎么样？"}
