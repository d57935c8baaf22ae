"""The ASR chain: a remote recognizer that fails hands the whole utterance
to the next one, a dead one is rested, and with none left the caller gets
one AsrError naming every failure. Real servers: FunASR's protocol from
testkit.fake_funasr, nothing listening for a dead one."""
import asyncio

import pytest

from testkit import audio
from testkit.fake_funasr import FakeFunAsr
from testkit.local_net import unused_port
from xiaozhi_server.providers import ProviderError, create
from xiaozhi_server.providers.asr.base import AsrError, open_stream

SPEECH = audio.tone(220, 1800, 16000)


@pytest.fixture
def fake():
    with FakeFunAsr() as server:
        yield server


def dead_url():
    return "ws://127.0.0.1:%d" % unused_port()


def funasr(url, name):
    return {"type": "funasr", "name": name, "url": url, "connect_timeout": 5, "final_timeout": 5}


async def test_a_cut_stream_is_heard_again_by_the_next_with_all_the_audio(fake, caplog):
    fake.fault("cut").say("我想听故事", "我想听故事。")
    chain = create("asr", {"type": "fallback", "providers": [funasr(fake.url, "primary"),
                                                             funasr(fake.url, "backup")]})
    stream = open_stream(chain, language="zh")
    for i in range(0, len(SPEECH), 1920):
        await stream.push(SPEECH[i:i + 1920])
    assert await stream.finish() == "我想听故事。"
    assert bytes(fake.connections[1].audio) == SPEECH
    assert "ASR primary failed" in caplog.text and "trying backup" in caplog.text


async def test_partials_come_from_the_first_member(fake):
    fake.say("小兔子跳", "小兔子跳。")
    partials = []
    chain = create("asr", {"type": "fallback", "providers": [funasr(fake.url, "a"), {"type": "whisper"}]})
    stream = open_stream(chain, on_partial=partials.append)
    for i in range(0, len(SPEECH), 1920):
        await stream.push(SPEECH[i:i + 1920])
    assert await stream.finish() == "小兔子跳。"
    assert partials[0] == "小兔" and partials[-1] == "小兔子跳。"


async def test_a_refusing_service_rests_and_later_utterances_skip_it(fake):
    fake.fault("reject_401").say("你好").say("再见")
    chain = create("asr", {"type": "fallback", "retry_after_s": 3600,
                           "providers": [funasr(fake.url, "primary"), funasr(fake.url, "backup")]})
    assert await chain.transcribe(SPEECH) == "你好"
    assert await chain.transcribe(SPEECH) == "再见"
    assert len(fake.connections) == 2    # 401 (no connection recorded), backup, backup again


async def test_every_member_down_is_one_clear_error():
    chain = create("asr", {"type": "fallback", "providers": [funasr(dead_url(), "a"), funasr(dead_url(), "b")]})
    with pytest.raises(AsrError) as err:
        await chain.transcribe(SPEECH)
    assert err.value.reason == "connection"
    assert "a: a ASR connection" in str(err.value) and "b: b ASR connection" in str(err.value)


async def test_dropped_utterance_closes_the_connection(fake):
    fake.say("还没说完")
    chain = create("asr", {"type": "fallback", "providers": [funasr(fake.url, "a")]})
    heard = asyncio.Event()
    stream = open_stream(chain, on_partial=lambda text: heard.set())
    await stream.push(SPEECH)
    await asyncio.wait_for(heard.wait(), 10)    # connected, audio on its way
    await stream.cancel()
    assert await asyncio.to_thread(lambda: fake.connections and fake.connections[0].closed.wait(10))


def test_a_chain_with_nothing_that_runs_is_a_config_error():
    with pytest.raises(ProviderError, match="at least one provider"):
        create("asr", {"type": "fallback", "providers": [{"type": "no-such-asr"}]})


async def test_whisper_hears_the_utterance_when_the_remote_service_is_down():
    """The documented deployment: a remote recognizer first, the embedded Whisper behind it."""
    speech = await audio.english_speech("The little cat is playing with a red ball.")
    chain = create("asr", {"type": "fallback", "providers": [funasr(dead_url(), "lan-funasr"),
                                                             {"type": "whisper", "language": "en"}]})
    stream = open_stream(chain, language="en")
    for i in range(0, len(speech), 1920):
        await stream.push(speech[i:i + 1920])
    words = set("".join(c.lower() if c.isalpha() else " " for c in await stream.finish()).split())
    assert {"cat", "playing", "red", "ball"} <= words
