"""Edge TTS (the edge-tts package) against a local server speaking Edge's
read-aloud WebSocket protocol (testkit.fake_edge_tts): voices by name,
rate and pitch in the SSML, MP3 decoded to 24 kHz PCM as it streams, and
every failure of the service handed to the fallback chain with a clear
log line that holds no token."""
import logging

import edge_tts.communicate
import pytest

from testkit import audio
from testkit.fake_edge_tts import CLIENT_TOKEN, TONE_HZ, FakeEdgeTts
from testkit.local_net import unused_port
from xiaozhi_server.providers import create
from xiaozhi_server.providers.tts.base import TtsError


@pytest.fixture(scope="module")
def server():
    with FakeEdgeTts() as fake:
        yield fake


@pytest.fixture
def edge(server, monkeypatch):
    """The fake, with edge-tts pointed at it: its endpoint constant is the only seam."""
    monkeypatch.setattr(edge_tts.communicate, "WSS_URL", server.endpoint)
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)   # aiohttp's trust_env would route loopback through one
    server._faults.clear()
    server.hold_after_first = False
    server.release.clear()
    yield server


def edge_tts_provider(**extra):
    return create("tts", dict({"type": "edge", "first_audio_timeout": 10, "chunk_timeout": 10}, **extra))


async def test_a_chinese_voice_by_name_decoded_to_pcm(edge):
    chunk = await edge_tts_provider(voice="zh-CN-XiaoxiaoNeural", rate="+10%", pitch=-5).synthesize("你好，小朋友")
    assert chunk.rate == 24000
    assert abs(audio.seconds(chunk.pcm, chunk.rate) - edge.seconds) < 0.1   # lame pads ~50 ms
    assert abs(audio.dominant_hz(chunk.pcm, chunk.rate) - TONE_HZ) < 10
    conn = edge.connections[-1]
    assert conn.voice == "Microsoft Server Speech Text to Speech Voice (zh-CN, XiaoxiaoNeural)"
    assert (conn.rate, conn.pitch, conn.text) == ("+10%", "-5Hz", "你好，小朋友")
    assert conn.config["context"]["synthesis"]["audio"]["outputFormat"] == "audio-24khz-48kbitrate-mono-mp3"
    assert "TrustedClientToken=%s" % CLIENT_TOKEN in conn.path and "Sec-MS-GEC=" in conn.path


async def test_an_english_voice(edge):
    await edge_tts_provider(voice="en-US-AnaNeural").synthesize("Hello there")
    assert edge.connections[-1].voice == "Microsoft Server Speech Text to Speech Voice (en-US, AnaNeural)"


async def test_audio_streams_before_the_turn_ends(edge):
    """The first PCM reaches the caller while the service still holds the rest."""
    edge.hold_after_first = True
    chunks = []
    async for chunk in edge_tts_provider().stream("今天天气很好"):
        if not chunks:
            assert not edge.connections[-1].finished
            edge.release.set()
        chunks.append(chunk)
    assert len(chunks) > 1 and edge.connections[-1].finished
    assert abs(sum(audio.seconds(c.pcm, c.rate) for c in chunks) - edge.seconds) < 0.1


def test_config_is_checked():
    with pytest.raises(ValueError, match="Invalid rate"):
        create("tts", {"type": "edge", "rate": "fast"})
    with pytest.raises(ValueError, match="Invalid pitch"):
        create("tts", {"type": "edge", "pitch": "+5%"})


FAILURES = [
    ("reject_403", "refused (HTTP 403)"),
    ("silent", "no audio within 0.5 s"),
    ("cut_before_audio", "no audio"),
    ("garbage", "not its protocol"),
    ("bad_binary", "not its protocol: UnexpectedResponse"),
    ("bad_mp3", "audio unreadable"),
    ("no_audio", "no audio"),
]


@pytest.mark.parametrize("fault, said", FAILURES, ids=[f for f, _ in FAILURES])
async def test_failures_go_to_the_fallback_chain(edge, caplog, fault, said):
    edge.fault(fault)
    if fault == "reject_403":
        edge.fault(fault)   # edge-tts retries a 403 once, after setting its clock from the answer's Date
    chain = create("tts", {"type": "fallback", "providers": [
        {"type": "edge", "first_audio_timeout": 0.5 if fault == "silent" else 30, "chunk_timeout": 30},
        {"type": "espeak", "voice": "en"}]})
    with caplog.at_level(logging.DEBUG):
        chunk = await chain.synthesize("hello")
    assert not chunk.text_only and chunk.rate != 24000 and audio.rms(chunk.pcm) > 100   # espeak spoke
    lines = [r.getMessage() for r in caplog.records if "TTS edge failed" in r.getMessage()]
    assert len(lines) == 1 and said in lines[0], lines
    logged = caplog.text
    assert CLIENT_TOKEN not in logged and "Sec-MS-GEC=" not in logged and "muid" not in logged.lower()


async def test_service_down(edge, monkeypatch):
    monkeypatch.setattr(edge_tts.communicate, "WSS_URL",
                        "ws://127.0.0.1:%d/edge/v1?TrustedClientToken=%s" % (unused_port(), CLIENT_TOKEN))
    with pytest.raises(TtsError) as err:
        await edge_tts_provider().synthesize("hello")
    assert "unreachable" in str(err.value) and CLIENT_TOKEN not in str(err.value)


async def test_a_cut_mid_sentence_keeps_what_was_heard(edge):
    """A cut after audio began: what came is played, the rest of that piece
    is lost (the chain does not say it twice) and the failure is an error."""
    edge.fault("cut")
    chunks = []
    with pytest.raises(TtsError):
        async for chunk in edge_tts_provider().stream("hello"):
            chunks.append(chunk)
    assert chunks and sum(audio.seconds(c.pcm, c.rate) for c in chunks) < edge.seconds


async def test_a_stall_mid_sentence_is_an_error(edge):
    edge.fault("stall")
    chunks = []
    with pytest.raises(TtsError, match="no more audio within 0.3 s"):
        async for chunk in edge_tts_provider(chunk_timeout=0.3).stream("hello"):
            chunks.append(chunk)
    assert chunks


def test_urls_in_messages_lose_their_query():
    from xiaozhi_server.providers.tts.edge import scrub
    said = scrub("403, message='Invalid response status', url='wss://speech.platform.bing.com/edge/v1"
                 "?TrustedClientToken=%s&Sec-MS-GEC=ABC123&ConnectionId=1'" % CLIENT_TOKEN)
    assert said == "403, message='Invalid response status', url='wss://speech.platform.bing.com/edge/v1'"
