"""A remote streaming ASR as the child meets it: the real server with a
FunASR runtime (testkit's server speaking its WebSocket protocol) and a
device speaking over the wire. When the service is down, too slow, cuts
the stream, refuses our key or answers garbage, the child hears "I could
not hear that" (never silence), the log says why once and holds no key;
with a fallback configured the fallback answers; a barge-in's words are
streamed anew and no connection to the service is left open."""
import asyncio
import time

import pytest

from testkit import audio
from testkit.fake_funasr import FakeFunAsr
from testkit.local_net import unused_port
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.text.lines import Lines

QUIET = {"opener_lines": {"zh": [], "en": []}}
# The words said are what is checked, not their audio: the lightest voice.
VOICE = {"zh": {"type": "espeak", "voice": "cmn-latn-pinyin"}, "en": {"type": "espeak", "voice": "en-us"}}
KEY = "sk-funasr-proxy-secret"
WAIT = 30


@pytest.fixture(scope="module")
def question():
    return audio.speech("Hello my friend how are you today", rate=16000)


@pytest.fixture
def funasr():
    with FakeFunAsr(default_text="你好") as server:
        yield server


def config(llm_url, asr, language="zh"):
    return server_config(llm_url, apps=QUIET, asr=asr, tts=VOICE[language], session={"language": language})


async def turn(dev, pcm):
    """The device says `pcm`: the first sentence it hears back."""
    since = time.monotonic()
    await dev.say_pcm(pcm, pace=0.02, tail_ms=1200)
    await dev.wait_for(lambda: dev.texts(since=since), timeout=WAIT)
    return dev.texts(since=since)[0]


async def all_closed(funasr):
    for conn in funasr.connections:
        assert await asyncio.to_thread(conn.closed.wait, WAIT), "a connection to the ASR was left open"


async def test_every_asr_failure_is_answered_with_the_could_not_hear_line(fake_llm, start_server, funasr,
                                                                          question, caplog):
    fake_llm.reply("🙂 我很好，谢谢！")
    faults = [("never_answer", "timeout"), ("cut", "closed"), ("reject_401", "auth"),
              ("garbage", "bad_response"), ("no_text", "bad_response")]
    for fault, _reason in faults:
        funasr.fault(fault)
    funasr.say("你好你好", "你好，你好吗？")
    server = await start_server(config(fake_llm.base_url, {
        "type": "funasr", "url": funasr.url, "final_timeout": 1, "api_key": KEY}))
    line = Lines.load().get("asr_failed", "zh")
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        for fault, reason in faults:
            caplog.clear()
            assert await turn(dev, question) == line, fault
            failures = [r.getMessage() for r in caplog.records if "ASR failed" in r.getMessage()]
            assert len(failures) == 1 and "funasr ASR %s" % reason in failures[0], (fault, failures)
            assert KEY not in caplog.text
        # The service answers again: so does the server.
        assert await turn(dev, question) == "我很好，谢谢！"
    assert fake_llm.requests[-1].messages[-1]["content"] == "你好，你好吗？" and len(fake_llm.requests) == 1
    assert len(funasr.connections) == len(faults)   # the 401 never became a connection
    assert all(c.authorization == "Bearer " + KEY for c in funasr.connections)
    await all_closed(funasr)


async def test_a_service_that_is_down_is_said_in_the_session_language(fake_llm, start_server, question):
    server = await start_server(config(fake_llm.base_url, {
        "type": "funasr", "url": "ws://127.0.0.1:%d" % unused_port()}, language="en"))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        assert await turn(dev, question) == "Sorry, I could not hear that. Please say it again."
    assert fake_llm.requests == []


async def test_with_a_fallback_the_fallback_answers(fake_llm, start_server, funasr, question, caplog):
    fake_llm.reply("🙂 I am fine, thank you!")
    funasr.say("howare", "How are you?")
    server = await start_server(config(fake_llm.base_url, {"type": "fallback", "providers": [
        {"type": "funasr", "name": "primary", "url": "ws://127.0.0.1:%d" % unused_port()},
        {"type": "funasr", "name": "backup", "url": funasr.url}]}))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        assert await turn(dev, question) == "I am fine, thank you!"
    assert fake_llm.requests[0].messages[-1]["content"] == "How are you?"
    assert "ASR primary failed" in caplog.text and "ASR failed" not in caplog.text
    # The backup heard the whole utterance at the end.
    assert len(funasr.connections) == 1 and funasr.connections[0].ended
    await all_closed(funasr)


async def test_a_barge_in_streams_the_new_words_and_leaves_no_connection_open(fake_llm, start_server, funasr,
                                                                             question):
    story = "😊 " + " ".join(["Once upon a time a little rabbit hopped to the river to drink."] * 8)
    fake_llm.reply(story)
    fake_llm.reply("🙂 Okay, let's stop the story.")
    funasr.say("tell", "Tell me a story.").say("stop", "Stop please.")
    server = await start_server(config(fake_llm.base_url, {"type": "funasr", "url": funasr.url}))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("realtime")
        await dev.say_pcm(question, pace=0.02, tail_ms=1200)
        await dev.wait_for(lambda: len(dev.audio) >= 10, timeout=WAIT)   # the story is being told
        since = time.monotonic()
        await dev.say_pcm(question, pace=0.02, tail_ms=1200)             # the child cuts in
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
        await dev.wait_for(lambda: "Okay, let's stop the story." in dev.texts(since=since), timeout=WAIT)
    assert [r.messages[-1]["content"] for r in fake_llm.requests] == ["Tell me a story.", "Stop please."]
    # One stream per utterance, each sent from its start and closed after its final text.
    assert len(funasr.connections) == 2 and all(c.ended for c in funasr.connections)
    assert funasr.connections[1].first["mode"] == "2pass"
    await all_closed(funasr)
