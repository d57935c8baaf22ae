"""Barge-in: an abort stops the frames (none after its tts stop), nothing of the aborted turn
follows (not even a late LLM answer), and the next turn works."""
import asyncio
import time

from testkit import audio
from testkit.control_api import eventually
from testkit.server import server_config
from testkit.wire_device import WireDevice

LONG = ("😊 Once upon a time there was a little rabbit who lived at the edge of a big green forest. "
        "Every morning she hopped down to the river to drink. One day she met a friendly turtle. "
        "They talked about the clouds, the flowers and the birds for a very long time.")


async def test_abort_stops_audio_and_next_turn_works(fake_llm, start_server):
    fake_llm.reply(LONG)
    fake_llm.reply("🙂 Okay, a short one: the rabbit and the turtle became friends.")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("tell me a long story")
        await dev.wait_for(lambda: len(dev.audio) >= 10, timeout=30)
        t_abort = time.monotonic()
        await dev.abort("wake_word_detected")
        t_stop, _m = await dev.wait_for(lambda: dev.find("tts", since=t_abort, state="stop"), timeout=5)
        await asyncio.sleep(0.6)
        # One reader records frames and messages in arrival order: a frame
        # after the stop would be heard after the child cut in. (How fast
        # the stop comes is a figure for make bench, not a margin here.)
        late = [t for t, _p in dev.audio if t > t_stop]
        assert late == [], "%d frames arrived after the tts stop that answered the abort" % len(late)
        print("abort -> tts stop seen: %.1f ms" % ((t_stop - t_abort) * 1000))
        n_first = len(dev.audio)
        t2 = time.monotonic()
        await dev.detect("a short one please")
        await dev.wait_json("tts", state="stop", since=t2, timeout=30)
        assert "became friends" in " ".join(dev.texts(since=t2))
        assert len(dev.audio) > n_first
        assert not any("edge of a big green forest" in x for x in dev.texts(since=t2))


async def test_late_llm_answer_after_abort_is_dropped(fake_llm, start_server):
    fake_llm.reply("😊 This answer comes too late to be spoken.", first_token_delay=1.0)
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("what is two plus two")
        await dev.wait_json("stt")
        await asyncio.sleep(0.3)
        await dev.abort()
        # The fake writes its answer after 1 s and finds the stream closed:
        # from then on nothing of that turn can reach the device.
        await eventually(lambda: fake_llm.requests[0].disconnected, timeout=30)
        assert not dev.find("llm"), "an emotion of the aborted turn was sent"
        assert dev.texts() == [] and dev.audio == []
    assert fake_llm.requests[0].disconnected, "the LLM stream should be closed on abort"


async def test_wake_word_gets_an_immediate_answer_and_no_deaf_window(fake_llm, start_server):
    fake_llm.reply("🙂 It is twelve o'clock.")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("你好小智")
        await dev.wait_json("tts", state="start", timeout=10)
        # the user goes on talking at once: heard, not swallowed by the greeting
        await dev.detect("what time is it")
        await dev.wait_json("stt", text="what time is it", timeout=5)
        await dev.wait_for(lambda: "twelve" in " ".join(dev.texts()), timeout=20)


async def test_speech_right_after_the_wake_word_is_heard(fake_llm, start_server):
    fake_llm.reply("🙂 Cats purr when they are happy.")
    server = await start_server(server_config(fake_llm.base_url))
    speech = await audio.english_speech("Why do cats purr?")
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("你好小智")
        await dev.listen_start("auto")
        await dev.say_pcm(speech, pace=0.06)
        stt = await dev.wait_json("stt", timeout=30)
        assert "cats" in stt["text"].lower(), "the words after the wake word were lost"
        await dev.wait_for(lambda: "purr when they are happy" in " ".join(dev.texts()), timeout=30)
