"""The language the child spoke travels with their turn to the voice that
answers: a reply whose sentence names no language by its script (a number,
a count) is read in the child's language, not the English default. The
voices are the language router's (providers/tts/router.py), each an
OpenAI-compatible TTS served locally over real HTTP."""
import asyncio

import pytest
from aiohttp import web

from testkit import audio
from testkit.local_net import serve
from xiaozhi_server.pipeline.reply import Reply, Turn
from xiaozhi_server.pipeline.speaker import Speaker
from xiaozhi_server.providers import create


@pytest.fixture
async def voices():
    asked = []      # (voice, text) in the order the server was asked

    async def speech(request):
        body = await request.json()
        asked.append((body["voice"], body["input"]))
        return web.Response(body=audio.make_wav(audio.tone(300, 200, 24000), 24000), content_type="audio/wav")

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    runner, url = await serve(app)
    tts = create("tts", {"type": "router",
                         "zh": {"type": "openai", "base_url": url + "/v1", "api_key": "k", "voice": "mandarin",
                                "response_format": "wav"},
                         "en": {"type": "openai", "base_url": url + "/v1", "api_key": "k", "voice": "english",
                                "response_format": "wav"}})
    yield tts, asked
    await runner.cleanup()


async def _spoken(tts, reply, *sentences):
    frames = []

    async def send_json(msg):
        return True

    async def send_audio(packet):
        frames.append(packet)

    async def lines():
        for s in sentences:
            yield s
    speaker = Speaker(tts, send_json, send_audio, "s1", lead_frames=50)
    assert await speaker.speak(lines(), reply)
    return frames


@pytest.mark.parametrize("child, voice", [("小猫有几条腿？", "mandarin"), ("How many legs has a cat?", "english")])
async def test_a_number_is_read_in_the_language_the_child_spoke(voices, child, voice):
    tts, asked = voices
    turn = Turn(child, 900.0, asyncio.get_running_loop().time())
    assert turn.language == ("zh" if voice == "mandarin" else "en")
    frames = await _spoken(tts, Reply(0, turn), "4!", "Cat 是猫。", "Four legs.")
    assert frames, "the reply was heard"
    # The script still decides where it names a language (the English lesson's words stay English).
    assert asked == [(voice, "4!"), ("mandarin", "Cat 是猫。"), ("english", "Four legs.")]


async def test_without_a_turn_the_script_alone_decides(voices):
    tts, asked = voices
    await _spoken(tts, Reply(0, None), "4!")
    assert asked == [("english", "4!")]
