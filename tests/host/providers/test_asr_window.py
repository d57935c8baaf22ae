"""Whisper on one padded window: what a child says comes back once, in any length up to and past 30 s."""
import asyncio

import pytest

from testkit import audio
from xiaozhi_server.providers import create


@pytest.fixture(scope="module")
def asr():
    return create("asr", {"type": "whisper"})


@pytest.fixture(scope="module")
def piper():
    return create("tts", {"type": "piper"})


async def english(piper, text):
    chunk = await piper.synthesize(text)
    return audio.resample(chunk.pcm, chunk.rate, 16000)


def words(text):
    return "".join(c.lower() if c.isalnum() or c.isspace() else " " for c in text).split()


async def test_a_one_second_question_is_heard_once(asr, piper):
    pcm = audio.silence(200, 16000) + await english(piper, "Hello there.") + audio.silence(200, 16000)
    assert audio.seconds(pcm, 16000) < 2.0
    text = await asr.transcribe(pcm, language="en")
    # Too little silence after a short clip makes Whisper say it again and again.
    assert words(text) == ["hello", "there"], text


async def test_the_language_is_detected_on_a_short_clip(asr, piper):
    text = await asr.transcribe(await english(piper, "The little cat is playing with a red ball."))
    assert {"cat", "playing", "red", "ball"} <= set(words(text)), text
    assert words(text).count("cat") == 1, text


async def test_audio_past_one_window_is_read_to_the_end(asr, piper):
    first, last = "My favourite animal is the elephant.", "Good night, little rabbit."
    middle = await english(piper, "We went to the park and we saw many ducks on the pond.")
    pcm = await english(piper, first)
    while audio.seconds(pcm, 16000) < 31:
        pcm += audio.silence(400, 16000) + middle
    pcm += audio.silence(400, 16000) + await english(piper, last)
    text = await asr.transcribe(pcm, language="en")
    said = words(text)
    assert "elephant" in said and said[-2:] == ["little", "rabbit"], text


async def test_sessions_asking_at_once_each_get_their_own_words(asr, piper):
    said = ["The little cat is playing.", "Good night, little rabbit.", "My favourite animal is the elephant."]
    clips = [await english(piper, s) for s in said]
    heard = await asyncio.gather(*(asr.transcribe(c, language="en") for c in clips))
    assert "cat" in words(heard[0]) and "rabbit" in words(heard[1]) and "elephant" in words(heard[2]), heard
