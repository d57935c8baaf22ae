"""HTTP TTS adapters against real local servers speaking GPT-SoVITS api_v2 and OpenAI audio/speech,
and the fallback chain that keeps a reply alive when providers fail."""

import pytest
from aiohttp import web

from testkit import audio
from testkit.local_net import serve
from xiaozhi_server.providers import ProviderUnavailable, create
from xiaozhi_server.text.split import split_for_limit
from xiaozhi_server.providers.tts.base import TtsError, TtsProvider


@pytest.fixture
async def sovits():
    seen = []

    async def tts(request):
        body = await request.json()
        seen.append(body)
        if not body.get("ref_audio_path"):
            return web.json_response({"message": "ref_audio_path cannot be empty"}, status=400)
        return web.Response(body=audio.make_wav(audio.tone(440, 500, 32000), 32000), content_type="audio/wav")

    app = web.Application()
    app.router.add_post("/tts", tts)
    runner, url = await serve(app)
    yield url, seen
    await runner.cleanup()


@pytest.fixture
async def openai_tts():
    seen = []

    async def speech(request):
        body = await request.json()
        seen.append(body)
        if body["voice"] == "broken":
            return web.json_response({"error": {"message": "voice not found", "type": "invalid_request_error"}},
                                     status=404)
        pcm = audio.tone(300, 700, 24000)
        if body["response_format"] == "wav":
            return web.Response(body=audio.make_wav(pcm, 24000), content_type="audio/wav")
        resp = web.StreamResponse(headers={"Content-Type": "audio/pcm"})
        await resp.prepare(request)
        for i in range(0, len(pcm), 3001):  # odd sizes: samples split across writes
            await resp.write(pcm[i:i + 3001])
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    runner, url = await serve(app)
    yield url + "/v1", seen
    await runner.cleanup()


async def test_gpt_sovits_returns_wav_audio(sovits):
    url, seen = sovits
    tts = create("tts", {"type": "gpt_sovits", "url": url, "ref_audio_path": "/voices/mom.wav",
                         "prompt_text": "你好", "prompt_lang": "zh"})
    chunk = await tts.synthesize("你好呀")
    assert chunk.rate == 32000 and abs(audio.dominant_hz(chunk.pcm, 32000) - 440) < 5
    assert seen[0]["text"] == "你好呀" and seen[0]["text_lang"] == "zh"
    assert seen[0]["ref_audio_path"] == "/voices/mom.wav" and seen[0]["media_type"] == "wav"


async def test_gpt_sovits_400_reports_the_servers_message(sovits):
    url, _ = sovits
    tts = create("tts", {"type": "gpt_sovits", "url": url})
    with pytest.raises(TtsError, match="HTTP 400.*ref_audio_path cannot be empty"):
        await tts.synthesize("hello")


async def test_openai_tts_streams_pcm_in_whole_samples(openai_tts):
    url, seen = openai_tts
    tts = create("tts", {"type": "openai", "base_url": url, "api_key": "k", "voice": "nova"})
    chunks = [c async for c in tts.stream("Hello there.")]
    assert len(chunks) > 1 and all(len(c.pcm) % 2 == 0 and c.rate == 24000 for c in chunks)
    pcm = b"".join(c.pcm for c in chunks)
    assert audio.seconds(pcm, 24000) == pytest.approx(0.7, abs=0.01)
    assert abs(audio.dominant_hz(pcm, 24000) - 300) < 5
    assert seen[0] == {"model": "tts-1", "voice": "nova", "input": "Hello there.", "response_format": "pcm"}


async def test_openai_tts_wav_and_errors(openai_tts):
    url, _ = openai_tts
    wav = await create("tts", {"type": "openai", "base_url": url, "response_format": "wav"}).synthesize("Hi")
    assert wav.rate == 24000 and wav.seconds == pytest.approx(0.7, abs=0.01)
    with pytest.raises(TtsError, match="404.*voice not found"):
        await create("tts", {"type": "openai", "base_url": url, "voice": "broken"}).synthesize("Hi")


def test_a_missing_program_makes_the_provider_unavailable():
    with pytest.raises(ProviderUnavailable, match="no-such-espeak"):
        create("tts", {"type": "espeak", "binary": "no-such-espeak"})


async def test_fallback_skips_failing_and_unavailable_providers(sovits):
    url, _ = sovits
    chain = create("tts", {"type": "fallback", "providers": [
        {"type": "espeak", "binary": "no-such-espeak"}, {"type": "gpt_sovits", "url": url},
        {"type": "espeak", "voice": "en-us"}]})
    assert chain.unavailable and "no-such-espeak" in chain.unavailable[0]
    items = [i async for i in chain.stream("Hello from the backup voice.")]
    assert len(items) == 1 and not items[0].text_only
    assert audio.voiced_fraction(items[0].pcm, items[0].rate) > 0.4


class Broken(TtsProvider):
    async def synthesize(self, text, voice=None):
        raise TtsError("engine crashed")


async def test_all_failing_gives_text_only_pieces_that_keep_every_word():
    text = "First sentence here. Second one is a bit longer, with a clause. Third."
    chain = create("tts", {"type": "fallback", "max_chars": 30, "providers": [
        Broken({"type": "broken_a"}), Broken({"type": "broken_b"})]})
    items = [i async for i in chain.stream(text)]
    assert all(i.text_only for i in items) and len(items) > 1
    assert " ".join(i.text for i in items).split() == text.split()
    assert items[0].errors == ["broken_a: engine crashed", "broken_b: engine crashed"]
    whole = await chain.synthesize(text)
    assert whole.text_only and whole.text == text


def test_split_respects_limit_at_boundaries_and_never_cuts_words():
    en = "The quick brown fox jumps. It lands softly, then runs away into the forest near the river."
    pieces = split_for_limit(en, 30)
    assert all(len(p) <= 30 for p in pieces)
    assert " ".join(pieces).split() == en.split()
    assert pieces[0] == "The quick brown fox jumps."
    zh = "小兔子在草地上跳来跳去，它找到了一根胡萝卜。然后它开心地回家了，妈妈在门口等它"
    pieces = split_for_limit(zh, 12)
    assert "".join(pieces) == zh and all(len(p) <= 12 for p in pieces)
    assert pieces[0] == "小兔子在草地上跳来跳去，"
    assert split_for_limit("Pi is 3.14159 exactly.", 8) == ["Pi is", "3.14159", "exactly."]
    assert split_for_limit("supercalifragilistic word", 5) == ["supercalifragilistic", "word"]
