"""A child's pause for breath is not the end of the turn: the words before
and after it reach the model as one utterance, and nothing of an answer to
half a sentence is ever heard. A child who stops on "and" gets longer to
find the next words than one who has finished a sentence."""
import asyncio

from testkit import audio
from testkit.server import server_config
from testkit.wire_device import WireDevice

QUIET = {"opener_lines": {"zh": [], "en": []}}


async def _say(server, pcm):
    """A device in auto mode says `pcm` in real time and hears the reply out:
    (the stt texts it got, the reply's texts, the server's session)."""
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        await dev.say_pcm(pcm, pace=0.06)
        await dev.wait_json("tts", state="stop", timeout=30)
        await asyncio.sleep(0.5)   # a second answer, to half the words, would show by now
        stts = [m["text"] for _t, m in dev.json if m.get("type") == "stt"]
        return stts, dev.texts(), next(iter(server.services.sessions))


async def test_a_pause_inside_a_sentence_joins_the_words(fake_llm, start_server):
    fake_llm.default_reply = "🙂 That sounds like a lovely day."
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    first = await audio.english_speech("Yesterday I went to the park")
    second = await audio.english_speech("with my big sister and our dog.")
    # Piper pads its phrases with quiet: with these 150 ms the child is silent
    # for about 350 ms, well past the 160 ms speculative end of turn and short
    # of the 700 ms a statement ("... the park.") waits before it is heard.
    stts, texts, session = await _say(server, first + audio.silence(150) + second)
    assert len(stts) == 1, stts
    assert "park" in stts[0].lower() and "sister" in stts[0].lower()
    assert texts == ["That sounds like a lovely day."]
    assert session.listener.resumed >= 1, "the pause never ended the turn speculatively"
    users = [r.messages[-1]["content"] for r in fake_llm.requests]
    heard = [u for u in users if "sister" in u.lower()]
    assert heard and "park" in heard[-1].lower(), users
    # the answer to half a sentence was prepared, maybe, but never became history
    session_history = fake_llm.requests[-1].messages
    assert not any(m["role"] == "user" and "sister" not in m["content"].lower() for m in session_history[1:])


async def test_a_real_end_of_turn_is_answered_while_the_silence_still_streams(fake_llm, start_server):
    from testkit.wire_device import opus_frames
    fake_llm.reply("🙂 Blue is a calm colour.")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    speech = await audio.english_speech("My favourite colour is blue.")
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        await dev.say_pcm(speech, pace=0.06, tail_ms=0)

        async def keep_streaming_silence():   # as a device in auto mode does
            for p in opus_frames(audio.silence(15000)):
                await dev.send_audio(p)
                await asyncio.sleep(0.06)
        streaming = asyncio.create_task(keep_streaming_silence())
        try:
            stt = await dev.wait_json("stt", timeout=14)
            assert not streaming.done(), "the turn ended only when the audio stopped"
            assert "blue" in stt["text"].lower()
            await dev.wait_json("tts", state="stop", timeout=20)
        finally:
            streaming.cancel()
        assert len(fake_llm.requests) == 1


async def test_a_pause_after_and_waits_longer_than_a_statement_would(fake_llm, start_server):
    fake_llm.default_reply = "🙂 What a big dog!"
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    first = await audio.english_speech("I went to the park and")
    second = await audio.english_speech("we saw a very big dog.")
    # About 950 ms without a word (Piper's own quiet included): longer than the
    # 700 ms most words get, shorter than the 1200 ms after "and".
    stts, texts, _session = await _say(server, first + audio.silence(750) + second)
    assert len(stts) == 1, stts
    assert "park" in stts[0].lower() and "dog" in stts[0].lower(), stts
    assert texts == ["What a big dog!"]
    # No reply was prepared for "... and": the model was asked once, for all the words.
    users = [r.messages[-1]["content"].lower() for r in fake_llm.requests]
    assert len(users) == 1 and "park" in users[0] and "dog" in users[0], users


async def test_a_turn_ended_just_before_the_wake_word_is_not_answered(fake_llm, start_server):
    """The audio a device sends before `listen detect` is the wake word itself:
    if the VAD has already ended it as a turn, that turn is dropped unheard
    and the child gets the wake word's greeting, not an answer to it."""
    fake_llm.default_reply = "🙂 Hello to you too."
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    speech = await audio.english_speech("Hello there")
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        listener = next(iter(server.services.sessions)).listener
        saying = asyncio.create_task(dev.say_pcm(speech + audio.silence(300), pace=0.06))
        while listener._tentative is None:     # the VAD has ended the turn, not yet committed
            listener.progress.clear()
            await asyncio.wait_for(listener.progress.wait(), 30)
        await dev.detect("你好小智")
        await saying
        await dev.wait_json("tts", state="stop", timeout=30)
        await asyncio.sleep(0.5)   # an answer to the dropped turn would show by now
        assert not dev.find("stt"), dev.json
        assert fake_llm.requests == []
