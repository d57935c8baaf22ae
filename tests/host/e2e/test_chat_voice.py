"""A spoken turn over the wire: Opus frames of real speech in, the right
transcript, a device tool called through MCP and its result fed back to
the LLM, and the answer spoken back."""
import json

from testkit.server import server_config
from testkit import audio
from testkit.wire_device import WireDevice, decode_down

STATUS = {"audio_speaker": {"volume": 40}, "battery": {"level": 80}}


async def test_spoken_question_with_device_tool_call(fake_llm, start_server):
    fake_llm.reply_tool_calls(("self_get_device_status", {}))
    fake_llm.reply("🙂 Your speaker volume is forty. Shall I make it louder?")
    server = await start_server(server_config(fake_llm.base_url))
    tools = {"self.get_device_status": lambda a: STATUS,
             "self.audio_speaker.set_volume": lambda a: True,
             "self.mp3.get_list": lambda a: {"files": ["lesson001.mp3"]},
             "self.mp3.stop": lambda a: {"stopped": False},
             "self.power_off": lambda a: {"accepted": True}}
    async with WireDevice(server.ws.url, tools=tools, page_limit=2) as dev:
        await dev.hello()
        # the server read every page of the device's tools (5 tools, 2 per page)
        await dev.wait_for(lambda: len(dev.list_cursors) >= 3, timeout=30)
        assert dev.list_cursors == [None, "self.mp3.stop", "self.power_off"]
        await dev.listen_start("auto")
        await dev.say_pcm(await audio.english_speech("What is the volume of my speaker?"), pace=0.02)
        stt = await dev.wait_json("stt", timeout=30)
        assert "volume" in stt["text"].lower() and "speaker" in stt["text"].lower()
        await dev.wait_json("tts", state="stop", timeout=30)
        assert dev.tool_calls == [("self.get_device_status", {})]
        assert "volume is forty" in " ".join(dev.texts())
        pcm = decode_down([p for _t, p in dev.audio])
        assert audio.voiced_fraction(pcm, 24000) > 0.4
    first, second = fake_llm.requests[0], fake_llm.requests[1]
    offered = set(first.tools)
    assert {"self_get_device_status", "self_audio_speaker_set_volume", "self_mp3_get_list",
            "self_mp3_stop", "self_power_off"} <= offered
    tool_msg = [m for m in second.messages if m["role"] == "tool"][0]
    assert json.loads(tool_msg["content"]) == STATUS


async def test_device_error_without_code_reaches_the_llm(fake_llm, start_server):
    fake_llm.reply_tool_calls(("self_audio_speaker_set_volume", {"volume": 50}))
    fake_llm.reply("😕 I could not change the volume.")

    def refuse(args):
        raise RuntimeError("speaker is busy")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, tools={"self.audio_speaker.set_volume": refuse}) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=30)
        await dev.detect("make it louder")
        await dev.wait_json("tts", state="stop", timeout=30)
    tool_msg = [m for m in fake_llm.requests[1].messages if m["role"] == "tool"][0]
    assert "speaker is busy" in tool_msg["content"]
