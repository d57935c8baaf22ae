"""The family's controls heard in a real session (WebSocket device, the
scripted LLM behind the real openai client, the control store and its API):
a blocked topic gets the parent's redirect line and a flag, a reply that
holds a blocked word never reaches TTS, chat and translation turns are kept only while
transcripts are on, and the memory of the child is in the next session's
prompt until a parent erases it."""
import datetime
import time

import aiohttp
import pytest

from testkit.control_api import Api, control_config, eventually
from testkit.fake_llm import FakeLLM
from testkit.wire_device import WireDevice

DEVICE = "aa:bb:cc:00:00:25"
REDIRECT = "Let's talk about the stars instead!"


@pytest.fixture
def translate_llm(monkeypatch):
    """The translate MCP process's model (it finds it through OPENAI_*)."""
    with FakeLLM() as llm:
        for k, v in llm.env().items():
            monkeypatch.setenv(k, v)
        yield llm


@pytest.fixture
async def family_server(tmp_path, fake_llm, translate_llm, start_server):
    cfg = control_config(tmp_path / "control.db")
    cfg["llm"] = {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"}
    cfg["tts"] = {"type": "espeak", "voice": "en-us"}       # the quickest real voice: what is spoken is the point
    cfg["session"]["language"] = "en"                       # its own lines in English, for that voice
    server = await start_server(cfg, with_broker=True, with_mcp=True)
    spoken = []                     # every text the TTS provider is asked to speak
    tts = server.services.tts
    real_stream = tts.stream

    def stream(text, *a, **kw):
        spoken.append(text)
        return real_stream(text, *a, **kw)
    tts.stream = stream
    async with aiohttp.ClientSession() as http:
        yield server, Api(server, http), spoken


def _path(what):
    return "/api/devices/%s/%s" % (DEVICE, what)


async def _turn(dev, words):
    since = time.monotonic()
    await dev.detect(words)
    await dev.wait_json("tts", state="stop", timeout=30, since=since)
    return dev.texts(since=since)


async def test_blocked_topic_redirect_flag_transcripts_and_memory(family_server, fake_llm, translate_llm):
    server, api, spoken = family_server
    assert (await api.call("PUT", _path("topics"), {"blocked_topics": ["ghosts", "打架"],
                                                    "redirect_line": REDIRECT}))[0] == 200
    status, _ = await api.call("PUT", _path("memory"), {"profile": {"name": "Mia", "interests": ["dinosaurs"]}})
    assert status == 200

    async with WireDevice(server.ws.url, device_id=DEVICE, mcp=False) as dev:
        await dev.hello()
        # transcripts are off (the default): this turn is not kept
        fake_llm.reply("😊 Hi Mia! Shall we count dinosaurs?")
        assert "Shall we count dinosaurs?" in " ".join(await _turn(dev, "hello")), dev.texts()
        system = fake_llm.requests[0].messages[0]["content"]
        assert "Mia" in system and "dinosaurs" in system, "the memory is in the chat prompt"
        assert (await api.call("PUT", _path("privacy"), {"transcripts": True}))[0] == 200

        # the child asks about a blocked topic: the redirect line, no model request, a flag
        said = await _turn(dev, "Tell me a story about Ghosts")
        assert said == [REDIRECT]
        assert fake_llm.request_count == 1

        # the model's reply holds a blocked word: that sentence is never synthesized
        fake_llm.reply("😊 Stars are far away. Some say ghosts live there. Let's count them!")
        said = await _turn(dev, "what are stars")
        assert said == ["Stars are far away.", REDIRECT], said
        assert not any("ghost" in t.lower() for t in spoken), spoken
        assert not any("count them" in t for t in spoken), "the reply stops at the blocked sentence"

        # the lexicon (glin-profanity's zh list) holds without any topic
        said = await _turn(dev, "你是个傻逼")
        assert said == [REDIRECT] and fake_llm.request_count == 2

        # the model learns something through the remember tool
        fake_llm.reply_tool_calls(("remember", {"interests": ["stars"], "age": 6}))
        fake_llm.reply("😊 I will remember that you love stars.")
        await _turn(dev, "I love stars and I am six")

        # a translation is kept too, under its app
        fake_llm.reply_tool_calls(("switch_app", {"app_id": "english_translation"}))
        await _turn(dev, "let's translate")
        translate_llm.reply("The weather is nice today.")
        assert "The weather is nice today." in await _turn(dev, "今天天气很好")

    flags = await eventually(lambda: _flags(api, 3))
    assert [f["topic"] for f in flags] == ["傻逼", "ghosts", "ghosts"]
    assert flags[2]["child_said"] == "Tell me a story about Ghosts" and flags[2]["reply_blocked"] is None
    assert flags[1]["child_said"] == "what are stars" and "ghosts live there" in flags[1]["reply_blocked"]
    assert all(f["redirect_line"] == REDIRECT for f in flags)
    async with api.http.delete(api.base + _path("flags/" + flags[0]["id"])) as r:
        assert r.status == 204
    assert [f["id"] for f in (await api.get(_path("flags")))[1]["flags"]] == [flags[1]["id"], flags[2]["id"]]

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    turns = (await eventually(lambda: _turns(api, today, 5)))
    assert [(t["app"], t["child"], t["reply"]) for t in turns[:3]] == [
        ("chat", "Tell me a story about Ghosts", REDIRECT),
        ("chat", "what are stars", "Stars are far away. " + REDIRECT),
        ("chat", "你是个傻逼", REDIRECT)]
    assert (turns[-1]["app"], turns[-1]["child"], turns[-1]["reply"]) == (
        "english_translation", "今天天气很好", "The weather is nice today.")
    assert all(t["child"] != "hello" for t in turns), "kept only once transcripts were on"

    memory = (await api.get(_path("memory")))[1]
    assert memory["profile"]["interests"] == ["dinosaurs", "stars"] and memory["profile"]["age"] == 6

    # the next day's session: the profile is in the prompt; after DELETE it is gone
    for erased in (False, True):
        if erased:
            assert (await api.delete(_path("memory")))[0] == 200
        n = fake_llm.request_count
        fake_llm.reply("😊 Good morning!")
        async with WireDevice(server.ws.url, device_id=DEVICE, mcp=False) as dev:
            await dev.hello()
            await _turn(dev, "good morning")
        system = fake_llm.requests[n].messages[0]["content"]
        assert ("Mia" in system and "stars" in system) is not erased, system


async def _flags(api, n):
    flags = (await api.get(_path("flags")))[1]["flags"]
    return flags if len(flags) >= n else None


async def _turns(api, day, n):
    turns = (await api.get(_path("transcripts"), date=day))[1]["turns"]
    return turns if len(turns) >= n else None
