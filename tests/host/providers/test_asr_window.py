"""Whisper on one padded window: what a child says comes back once, in any length up to and past 30 s."""
import asyncio

import pytest

from testkit import audio
from xiaozhi_server.providers import create
from xiaozhi_server.providers.asr import whisper as asr_whisper


@pytest.fixture(scope="module")
def asr():
    return create("asr", {"type": "whisper"})


@pytest.fixture(scope="module")
def piper():
    return create("tts", audio.STEADY_PIPER)


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


QUESTIONS = (("Hello there.", "there"), ("The little cat is playing with a red ball.", "ball"),
             ("Can you sing me a song?", "sing"), ("How far away is the moon?", "moon"))


async def test_a_question_that_loops_on_little_padding_is_still_heard_once(piper):
    # With 0.5 to 1 s of padding Whisper repeats most of these questions; the
    # provider then decodes them again with 10 s of padding.
    first_tries_looped = 0
    for pad in (50, 100):
        asr = create("asr", {"type": "whisper", "short_pad_frames": pad})
        model = await asyncio.to_thread(asr._model)
        for question, key in QUESTIONS:
            pcm = audio.silence(400, 16000) + await english(piper, question) + audio.silence(400, 16000)
            text = await asr.transcribe(pcm, language="en")
            assert words(text).count(key) == 1, (pad, question, text)
            samples = audio_array(pcm)
            budget = asr_whisper.token_budget(len(samples) / 16000)
            ids, _ = await asyncio.to_thread(asr_whisper._decode, model, asr_whisper.features(model, samples, pad),
                                             "en", 1, budget)
            first_tries_looped += asr_whisper.looped(ids, budget)
    assert first_tries_looped, "no first try looped: this test no longer exercises the second decode"


def audio_array(pcm):
    import numpy as np
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def test_a_negative_short_padding_is_refused():
    with pytest.raises(ValueError, match="short_pad_frames"):
        create("asr", {"type": "whisper", "short_pad_frames": -1})


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


async def test_a_text_ending_in_its_own_repeat_is_taken_for_a_loop_and_a_childs_repeat_is_not(asr):
    model = await asyncio.to_thread(asr._model)

    def looped(text, language="en"):
        tok = asr_whisper._tokenizer(model, language)[0]
        return asr_whisper.looped(tok.encode(" " + text if language == "en" else text), budget=1000)

    assert looped("Hello there. Hello there.") and looped("Stop. Stop. Stop. Stop.")
    assert looped("睡覺前藥記得刷牙我睡覺前藥記得刷牙", "zh")        # second round cut off
    assert not looped("No, no, I said no.") and not looped("I like it, I like it.")
    assert not looped("大象的鼻子很长很长。", "zh")
    # A longer question that ends on words said before is not a loop either.
    assert not looped("What do dinosaurs eat? Can you sing me a song? Is it bedtime yet? What do dinosaurs eat?")
