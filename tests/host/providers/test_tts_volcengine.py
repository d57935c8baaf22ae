"""Volcengine (Doubao) TTS against a local server speaking its binary
WebSocket framing (testkit.fake_volcengine, /api/v1/tts/ws_binary): the
request, PCM streamed piece by piece at the asked rate until the negative
sequence, and every failure handed to the fallback chain with a clear log
line that holds no token."""
import logging
import socket

import pytest

from testkit import audio
from testkit.fake_volcengine import TONE_HZ, FakeVolcengine
from testkit.local_net import unused_port
from xiaozhi_server.providers import create
from xiaozhi_server.providers.tts.base import TtsError

TOKEN = "volc-tts-secret-3"


@pytest.fixture(scope="module")
def server():
    with FakeVolcengine(token=TOKEN) as fake:
        yield fake


@pytest.fixture
def volc(server):
    server._script.clear()
    yield server


def doubao(url, **extra):
    return dict({"type": "volcengine", "url": url + "/api/v1/tts/ws_binary", "appid": "1234", "token": TOKEN,
                 "voice": "zh_female_cancan_mars_bigtts"}, **extra)


async def test_pcm_streams_piece_by_piece(volc):
    chunks = [c async for c in create("tts", doubao(volc.url, rate=16000, speed_ratio=1.2)).stream("你好，小朋友")]
    assert len(chunks) == 6 and all(c.rate == 16000 and len(c.pcm) % 2 == 0 for c in chunks)
    pcm = b"".join(c.pcm for c in chunks)
    assert pcm == audio.tone(TONE_HZ, 600, 16000)   # pieces split inside samples are joined whole
    req = volc.connections[-1].request
    assert req["app"] == {"appid": "1234", "token": TOKEN, "cluster": "volcano_tts"}
    assert req["audio"] == {"voice_type": "zh_female_cancan_mars_bigtts", "encoding": "pcm", "rate": 16000,
                            "speed_ratio": 1.2, "volume_ratio": 1.0, "pitch_ratio": 1.0}
    assert req["request"]["text"] == "你好，小朋友" and req["request"]["operation"] == "submit"
    assert volc.connections[-1].headers["Authorization"] == "Bearer; " + TOKEN


async def test_token_from_the_environment(volc, monkeypatch):
    monkeypatch.setenv("XIAOZHI_VOLC_TTS_TOKEN", TOKEN)
    monkeypatch.setenv("XIAOZHI_VOLC_TOKEN", "the-asr-one")
    chunk = await create("tts", doubao(volc.url, token=None)).synthesize("好")
    assert chunk.rate == 24000 and abs(audio.seconds(chunk.pcm, 24000) - 0.6) < 0.01
    monkeypatch.setenv("MY_DOUBAO", TOKEN)
    monkeypatch.setenv("XIAOZHI_VOLC_TTS_TOKEN", "not-this-one")
    assert (await create("tts", doubao(volc.url, token=None, token_env="MY_DOUBAO")).synthesize("好")).pcm


FAILURES = [
    ("wrong_token", "error 3001: authenticate request"),
    ("silent", "no audio within 0.5 s"),
    ("server_error", "error 3031: synthesis failed"),
    ("down", "unreachable"),
]


@pytest.mark.parametrize("fault, said", FAILURES, ids=[f for f, _ in FAILURES])
async def test_failures_before_audio_go_to_the_fallback_chain(volc, caplog, fault, said):
    url = volc.url
    if fault == "down":
        url = "ws://127.0.0.1:%d" % unused_port()
    elif fault != "wrong_token":
        volc.fault(fault)
    member = doubao(url, first_audio_timeout=0.5 if fault == "silent" else 30,
                    token="wrong" if fault == "wrong_token" else TOKEN)
    chain = create("tts", {"type": "fallback", "providers": [member, {"type": "espeak", "voice": "en"}]})
    with caplog.at_level(logging.DEBUG):   # at every level: websockets logs handshake headers at DEBUG
        chunk = await chain.synthesize("hello")
    assert not chunk.text_only and chunk.rate != 24000 and audio.rms(chunk.pcm) > 100   # espeak spoke
    lines = [r.getMessage() for r in caplog.records if "TTS volcengine failed" in r.getMessage()]
    assert len(lines) == 1 and said in lines[0], lines
    assert TOKEN not in caplog.text


async def test_handshake_never_answered():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        tts = create("tts", doubao("ws://127.0.0.1:%d" % s.getsockname()[1], connect_timeout=0.3))
        with pytest.raises(TtsError, match="could not connect .* within 0.3 s"):
            await tts.synthesize("hello")


@pytest.mark.parametrize("fault, said", [
    ("cut", "closed the connection before the last audio"),
    ("stall", "no more audio within 0.3 s"),
    ("garbage", "not its protocol: a text frame"),
    ("malformed", "not its protocol: payload size"),
])
async def test_failures_mid_answer(volc, fault, said):
    """After some audio: what came is kept, the failure is said (the chain
    then drops the rest of that piece rather than say it twice)."""
    volc.fault(fault)
    chunks = []
    with pytest.raises(TtsError, match=said):
        async for chunk in create("tts", doubao(volc.url, chunk_timeout=0.3 if fault == "stall" else 30)).stream("hello"):
            chunks.append(chunk)
    assert len(chunks) == 1
