"""A chat turn from text (listen detect with an utterance, as text-only
clients do): the LLM's answer comes back as subtitles, an emotion and
real Opus speech, paced like playback, ending with tts stop."""

from testkit.server import server_config
from testkit import audio
from testkit.wire_device import WireDevice, decode_down


async def test_text_turn_gets_spoken_answer(fake_llm, start_server):
    fake_llm.reply("😊 Hello there! It is a sunny day, so let's go and play outside.")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        hello = await dev.hello()
        assert hello["audio_params"]["sample_rate"] == 24000 and hello["transport"] == "websocket"
        await dev.detect("what is the weather like")
        stt = await dev.wait_json("stt")
        assert stt["text"] == "what is the weather like"
        llm = await dev.wait_json("llm")
        assert llm["emotion"] == "happy"
        await dev.wait_json("tts", state="start", timeout=20)
        t_start, _ = dev.find("tts", state="start")
        await dev.wait_json("tts", state="stop", timeout=30)
        t_stop, _ = dev.find("tts", state="stop")
        said = " ".join(dev.texts())
        assert "sunny day" in said and "😊" not in said
        packets = dev.audio_between(t_start, t_stop)
        pcm = decode_down(packets)
        played = audio.seconds(pcm, 24000)
        assert played > 1.5, "too little audio for two sentences"
        assert audio.voiced_fraction(pcm, 24000) > 0.4
        # paced like playback: the frames took about as long to arrive as they play
        first, last = dev.audio[0][0], dev.audio[-1][0]
        assert last - first > played - 0.5
        # tts stop only after the last frame has had time to play
        assert t_stop >= first + played - 0.25
    req = fake_llm.requests[0]
    assert req.messages[0]["role"] == "system"
    assert req.messages[-1] == {"role": "user", "content": "what is the weather like"}


async def test_no_model_configured_says_so(start_server):
    server = await start_server(server_config(None))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("tell me a story")
        await dev.wait_json("tts", state="stop", timeout=30)
        assert "No language model is configured" in " ".join(dev.texts())
        assert dev.audio, "the line is spoken, not only shown"
