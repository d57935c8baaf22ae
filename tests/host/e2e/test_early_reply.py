"""The reply started on a streaming recogniser's words before its final
text (pipeline/early_reply.py), as the child meets it: the real server,
testkit's FunASR runtime holding its final text back (so the early reply
is surely under way before it), and a device speaking over the wire.

What the board receives is the test: an early reply whose final text says
other words is never heard (no audio, no subtitle, no trace in the
conversation), one whose final text agrees is heard once, with no second
request to the model; a tool call waits for the final text and the
commit; a barge-in still stops a reply."""
import asyncio
import time

import pytest

from testkit import audio
from testkit.fake_funasr import FakeFunAsr
from testkit.server import server_config
from testkit.wire_device import WireDevice

QUIET = {"opener_lines": {"zh": [], "en": []}}
WAIT = 30


@pytest.fixture(scope="module")
def question():
    return audio.speech("Hello my friend how are you today", rate=16000)


@pytest.fixture
def funasr():
    with FakeFunAsr(default_text="hello") as server:
        yield server


def config(llm_url, funasr):
    # The final text is the server's flagged one, however long it is held
    # (not the streaming words taken as final after a quiet spell).
    asr = {"type": "funasr", "url": funasr.url, "final_settle_s": 60, "final_timeout": 60}
    return server_config(llm_url, apps=QUIET, asr=asr,
                         tts={"type": "espeak", "voice": "en-us"}, session={"language": "en"})


def sent(dev, type_, since, **fields):
    """Every message of `type_` the board received since `since`."""
    return [m for t, m in dev.json if t >= since and m.get("type") == type_
            and all(m.get(k) == v for k, v in fields.items())]


def listeners(server):
    return [s.listener for s in server.services.sessions if s.listener is not None]


async def speak_until_the_early_request(dev, fake_llm, funasr, pcm, requests=1):
    """The child's words and the pause after them, the final text held back:
    until the model has the early request."""
    await dev.say_pcm(pcm, pace=0.02, tail_ms=1200)
    assert await asyncio.to_thread(fake_llm.wait_for_requests, requests, WAIT)


async def test_an_early_reply_the_final_text_contradicts_is_never_heard(fake_llm, start_server, funasr, question):
    fake_llm.reply("😊 A wrong answer to words never said.")
    fake_llm.reply("🙂 I am fine, thank you!")
    fake_llm.reply("🙂 Blue is my favourite.")
    funasr.hold_finals()
    funasr.say("how are you", "How are you today?").say("your colour", "Your colour?")
    server = await start_server(config(fake_llm.base_url, funasr))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        since = time.monotonic()
        await speak_until_the_early_request(dev, fake_llm, funasr, question)
        assert fake_llm.requests[0].messages[-1]["content"] == "how are you"
        # The early reply is ready and held: nothing of it reaches the board.
        await asyncio.sleep(0)
        assert sent(dev, "tts", since) == [] and dev.audio == [] and sent(dev, "stt", since) == []
        funasr.release_finals()
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
        assert dev.texts(since=since) == ["I am fine, thank you!"]
        assert [m["text"] for m in sent(dev, "stt", since)] == ["How are you today?"]
        assert [m["state"] for m in sent(dev, "tts", since)] == ["start", "sentence_start", "sentence_end", "stop"]
        # The next turn's request holds the heard turn only: the early one left no trace.
        since = time.monotonic()
        await dev.say_pcm(question, pace=0.02, tail_ms=1200)
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
        lis, = listeners(server)
    history = [m["content"] for m in fake_llm.requests[-1].messages if m["role"] != "system"]
    assert history == ["How are you today?", "🙂 I am fine, thank you!", "Your colour?"]
    assert "wrong" not in str(fake_llm.requests[-1].messages) and fake_llm.request_count == 3
    assert (lis.early_started, lis.early_wasted) == (1, 1)


async def test_an_early_reply_the_final_text_agrees_with_is_heard_once(fake_llm, start_server, funasr, question):
    fake_llm.reply("🙂 I am fine, thank you!")
    funasr.hold_finals()
    funasr.say("how are you today", "How are you today?")
    server = await start_server(config(fake_llm.base_url, funasr))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        since = time.monotonic()
        await speak_until_the_early_request(dev, fake_llm, funasr, question)
        await asyncio.sleep(0)
        assert sent(dev, "tts", since) == [] and dev.audio == []
        funasr.release_finals()
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
        await dev.say_pcm(audio.silence(600), pace=0.02, tail_ms=0)   # time for a second answer to show
        lis, = listeners(server)
        assert dev.texts(since=since) == ["I am fine, thank you!"]
        assert len(sent(dev, "tts", since, state="start")) == 1 and dev.audio
        # The screen shows the final text, punctuation and all.
        assert [m["text"] for m in sent(dev, "stt", since)] == ["How are you today?"]
    assert fake_llm.request_count == 1
    assert (lis.early_started, lis.early_wasted) == (1, 0)


async def test_a_tool_call_waits_for_the_final_text_and_the_commit(fake_llm, start_server, funasr, question):
    fake_llm.reply_tool_calls(("self_audio_speaker_set_volume", {"volume": 80}))
    fake_llm.reply("🙂 It is louder now.")
    funasr.hold_finals()
    funasr.say("make it louder", "Make it louder.")
    server = await start_server(config(fake_llm.base_url, funasr))
    async with WireDevice(server.ws.url, tools={"self.audio_speaker.set_volume": lambda args: True}) as dev:
        await dev.hello()
        await dev.wait_for(lambda: dev.list_cursors, timeout=WAIT)
        await dev.listen_start("auto")
        since = time.monotonic()
        await speak_until_the_early_request(dev, fake_llm, funasr, question)
        # The model asked for the tool on the early words; the child's turn
        # has committed (700 ms of quiet), but the final text is not in.
        lis, = listeners(server)
        await dev.wait_for(lambda: lis._tentative is None, timeout=WAIT)
        await dev.say_pcm(audio.silence(300), pace=0.02, tail_ms=0)
        assert dev.tool_calls == [] and fake_llm.request_count == 1
        funasr.release_finals()
        await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
    assert dev.tool_calls == [("self.audio_speaker.set_volume", {"volume": 80})]
    assert dev.texts(since=since) == ["It is louder now."]


async def test_a_barge_in_stops_the_reply_when_it_started_early(fake_llm, start_server, question):
    story = "😊 " + " ".join(["Once upon a time a little rabbit hopped to the river to drink."] * 8)
    fake_llm.reply(story)
    fake_llm.reply("🙂 Okay, let's stop the story.")
    # The final text comes well after the streaming words: the replies start early.
    with FakeFunAsr(final_delay_s=0.3) as funasr:
        funasr.say("tell me a story", "Tell me a story.").say("stop please", "Stop please.")
        server = await start_server(config(fake_llm.base_url, funasr))
        async with WireDevice(server.ws.url, mcp=False) as dev:
            await dev.hello()
            await dev.listen_start("realtime")
            await dev.say_pcm(question, pace=0.02, tail_ms=1200)
            await dev.wait_for(lambda: len(dev.audio) >= 10, timeout=WAIT)   # the story is being told
            since = time.monotonic()
            await dev.say_pcm(question, pace=0.02, tail_ms=1200)             # the child cuts in
            await dev.wait_for(lambda: dev.find("tts", since=since, state="stop"), timeout=WAIT)
            await dev.wait_for(lambda: "Okay, let's stop the story." in dev.texts(since=since), timeout=WAIT)
            lis, = listeners(server)
    assert [r.messages[-1]["content"] for r in fake_llm.requests] == ["tell me a story", "stop please"]
    assert lis.early_started == 2 and lis.early_wasted == 0
