"""The recogniser is tuned to the child (issue 34): the one language a
parent says the child speaks (PUT /limits `language`) is the one Whisper
listens for, and the child's name from memory and the command words of
that language are its prompt. A device whose parent set nothing is heard
as configured (detection among the server's languages, no prompt: words
of one language tip detection towards it). The real Whisper
decodes; the test only notes what it was asked. A streaming
recogniser (testkit's FunASR runtime server) gets the same words as
hotwords in its first message."""
import json
import time

import aiohttp
import pytest

from testkit import audio
from testkit.control_api import Api, control_config
from testkit.fake_funasr import FakeFunAsr
from testkit.wire_device import WireDevice

CHILD = "aa:bb:cc:00:00:34"
OTHER = "aa:bb:cc:00:00:35"
WAIT = 60


def note_asks(asr):
    """The server's own Whisper, noting the language and prompt of each
    utterance it is given: [(language, prompt)]."""
    asked = []
    real = asr.transcribe

    async def transcribe(pcm16k, language=None, prompt=""):
        asked.append((language, prompt))
        return await real(pcm16k, language=language, prompt=prompt)
    asr.transcribe = transcribe
    return asked


@pytest.fixture
async def family_server(tmp_path, fake_llm, start_server):
    cfg = control_config(tmp_path / "control.db", apps={"opener_lines": {"zh": [], "en": []}})
    cfg["llm"] = {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"}
    cfg["tts"] = {"type": "espeak", "voice": "en-us"}
    cfg["asr"] = {"type": "whisper", "languages": ["zh", "en"]}
    server = await start_server(cfg, with_broker=True, with_mcp=False)
    asked = note_asks(server.services.asr)
    async with aiohttp.ClientSession() as http:
        yield server, Api(server, http), asked


async def one_turn(server, device_id):
    async with WireDevice(server.ws.url, device_id=device_id, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        since = time.monotonic()
        await dev.say_pcm(audio.speech("Hello my friend how are you today", rate=16000), pace=0.02, tail_ms=1200)
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)


async def test_the_parents_language_and_the_childs_name_steer_the_recogniser(family_server, fake_llm):
    server, api, asked = family_server
    path = "/api/devices/%s/" % CHILD
    await api.post("/api/devices/%s/credentials" % CHILD, {})    # the parent adds the device
    status, limits = await api.call("PUT", path + "limits", {"language": "zh"})
    assert status == 200 and limits["language"] == "zh"
    status, err = await api.call("PUT", path + "limits", {"language": "fr"})
    assert status == 400 and err["error"]["message"].startswith("language"), err
    assert (await api.get(path + "limits"))[1]["language"] == "zh"
    assert (await api.call("PUT", path + "memory", {"profile": {"name": "朵朵"}}))[0] == 200

    fake_llm.reply("🙂 你好！")
    await one_turn(server, CHILD)
    (language, prompt), = asked
    assert language == "zh"
    assert prompt.startswith("朵朵，小智") and "打开翻译" in prompt
    assert fake_llm.request_count == 1      # the words went on to the model

    # A device whose parent set nothing: detection chooses, unprompted.
    fake_llm.reply("🙂 Hello!")
    await one_turn(server, OTHER)
    assert asked[1] == (None, "")

    # The parent lifts the one-language setting: the next session detects again.
    assert (await api.call("PUT", path + "limits", {"language": None}))[1]["language"] is None
    fake_llm.reply("🙂 Hello again!")
    await one_turn(server, CHILD)
    assert asked[2] == (None, "")


async def test_a_streaming_recogniser_gets_the_name_and_command_words_as_hotwords(tmp_path, fake_llm,
                                                                                   start_server):
    with FakeFunAsr(default_text="你好") as funasr:
        cfg = control_config(tmp_path / "control.db", apps={"opener_lines": {"zh": [], "en": []}})
        cfg["llm"] = {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"}
        cfg["tts"] = {"type": "espeak", "voice": "en-us"}
        cfg["asr"] = {"type": "funasr", "url": funasr.url, "hotwords": {"恐龙": 30},
                      "command_words": {"zh": ["小智", "讲故事"]}}
        server = await start_server(cfg, with_broker=True, with_mcp=False)
        async with aiohttp.ClientSession() as http:
            api = Api(server, http)
            await api.post("/api/devices/%s/credentials" % CHILD, {})
            assert (await api.call("PUT", "/api/devices/%s/limits" % CHILD, {"language": "zh"}))[0] == 200
            assert (await api.call("PUT", "/api/devices/%s/memory" % CHILD, {"profile": {"name": "朵朵"}}))[0] == 200
        fake_llm.reply("🙂 你好！")
        fake_llm.reply("🙂 Hello!")
        await one_turn(server, CHILD)
        await one_turn(server, OTHER)
    child, other = funasr.connections[0].first, funasr.connections[1].first
    # The child's words beside the operator's, in both fields FunASR's servers read.
    assert json.loads(child["hotwords"]) == {"朵朵": 20, "小智": 20, "讲故事": 20, "恐龙": 30}
    assert child["hotword"] == "朵朵 小智 讲故事 恐龙"
    # A device whose parent set no language: the operator's hotwords only.
    assert json.loads(other["hotwords"]) == {"恐龙": 30}
