"""The FunASR runtime provider against a local server speaking FunASR's
WebSocket protocol (testkit.fake_funasr): audio streamed while the child
speaks, partial text from 2pass-online, the final text from 2pass-offline,
and a clear AsrError when the server is down, slow, cuts the stream,
refuses the handshake or sends garbage."""
import asyncio
import json
import logging
import socket
import ssl
import subprocess

import pytest

from testkit import audio
from testkit.fake_funasr import FakeFunAsr
from testkit.local_net import unused_port
from xiaozhi_server.providers import create
from xiaozhi_server.providers.asr.base import AsrError, open_stream

SPEECH = audio.tone(220, 2400, 16000)   # 2.4 s: four 600 ms chunks
PIECE = 1920                            # 60 ms, as the listener gets audio


@pytest.fixture(scope="module")
def funasr():
    with FakeFunAsr() as server:
        yield server


@pytest.fixture
def fake(funasr):
    funasr._script.clear()
    before = len(funasr.connections)
    yield funasr
    del funasr.connections[before:]


def funasr_asr(fake, **extra):
    return create("asr", dict({"type": "funasr", "url": fake.url, "connect_timeout": 5, "final_timeout": 5},
                              **extra))


async def test_2pass_partials_while_speaking_then_the_corrected_final(fake):
    fake.say("今天天气怎么样", "今天天气怎么样？")
    partials = []
    stream = open_stream(funasr_asr(fake, hotwords=["小智"]), language="zh", on_partial=partials.append)
    for i in range(0, len(SPEECH), PIECE):
        await stream.push(SPEECH[i:i + PIECE])
    assert await stream.finish() == "今天天气怎么样？"
    # Streaming pieces as they came (2 characters per 600 ms chunk), then the corrected text.
    assert partials[:3] == ["今天", "今天天气", "今天天气怎么"] and partials[-1] == "今天天气怎么样？"
    conn = fake.connections[-1]
    assert conn.first == {"mode": "2pass", "chunk_size": [5, 10, 5], "chunk_interval": 10,
                          "wav_name": conn.first["wav_name"], "wav_format": "pcm", "audio_fs": 16000,
                          "is_speaking": True, "hotwords": json.dumps({"小智": 20}, ensure_ascii=False),
                          "hotword": "小智", "itn": True}
    assert bytes(conn.audio) == SPEECH and conn.ended


async def test_partials_arrive_before_the_end_of_speech(fake):
    """The words are there while the child still speaks (what the turn-taking rule reads)."""
    fake.say("我想听故事")
    partials = []
    two = asyncio.Event()

    def heard(text):
        partials.append(text)
        if len(partials) == 2:
            two.set()

    stream = open_stream(funasr_asr(fake), on_partial=heard)
    await stream.push(SPEECH[:19200 * 2])   # 1.2 s: two chunks
    await asyncio.wait_for(two.wait(), 10)
    assert partials == ["我想", "我想听故"] and stream.partial == "我想听故"
    assert not fake.connections[-1].ended
    await stream.cancel()


async def test_batch_transcribe_and_offline_mode(fake):
    fake.say("你好小智", "你好，小智。", offline_is_final=False)   # the C++ offline server's flag
    assert await funasr_asr(fake, mode="offline").transcribe(SPEECH) == "你好，小智。"
    assert fake.connections[-1].first["mode"] == "offline"


async def test_python_servers_inverted_final_flag(fake):
    """FunASR's Python server flags every streaming result is_final while the
    child speaks and leaves the last one unflagged: the stream waits for
    our end of speech, then takes the last result once the server is quiet."""
    fake.say("今天天气怎么样", "今天天气怎么样？", flags="python")
    partials = []
    stream = open_stream(funasr_asr(fake, final_settle_s=0.05), on_partial=partials.append)
    for i in range(0, len(SPEECH), PIECE):
        await stream.push(SPEECH[i:i + PIECE])
    assert await stream.finish() == "今天天气怎么样？"
    assert partials[0] == "今天"
    assert await asyncio.to_thread(fake.connections[-1].closed.wait, 10)   # and the connection is closed


async def test_a_late_segment_is_not_taken_for_the_final(fake):
    """A busy 2pass server's correction of an earlier segment comes after the
    end of speech, unflagged; the flagged final still completes the text."""
    fake.say("", "然后呢？", late_segment="我去了公园。")
    assert await funasr_asr(fake).transcribe(SPEECH) == "我去了公园。然后呢？"


async def test_online_mode_text_is_the_streamed_pieces(fake):
    fake.say("小兔子跳")
    assert await funasr_asr(fake, mode="online").transcribe(SPEECH) == "小兔子跳"


def test_config_is_checked():
    with pytest.raises(ValueError, match="mode must be one of"):
        create("asr", {"type": "funasr", "url": "ws://x:1", "mode": "3pass"})
    with pytest.raises(ValueError, match="ws:// or wss://"):
        create("asr", {"type": "funasr", "url": "http://x:1"})
    assert create("asr", {"type": "funasr", "url": "ws://x:10095", "ssl": True}).url == "wss://x:10095"


async def test_service_down():
    port = unused_port()
    with pytest.raises(AsrError) as err:
        await create("asr", {"type": "funasr", "url": "ws://127.0.0.1:%d" % port}).transcribe(SPEECH)
    assert err.value.reason == "connection" and str(port) in str(err.value)


async def test_handshake_never_answered():
    """A host that takes the TCP connection (the kernel's backlog) but never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        url = "ws://127.0.0.1:%d" % s.getsockname()[1]
        with pytest.raises(AsrError) as err:
            await create("asr", {"type": "funasr", "url": url, "connect_timeout": 0.3}).transcribe(SPEECH)
    assert err.value.reason == "timeout" and "connect" in str(err.value)


async def test_slow_final_times_out(fake):
    fake.fault("never_answer")
    with pytest.raises(AsrError) as err:
        await funasr_asr(fake, final_timeout=0.3).transcribe(SPEECH)
    assert err.value.reason == "timeout" and "final text" in str(err.value)
    assert fake.connections[-1].closed.wait(10)   # our side closed the connection


async def test_cut_stream(fake):
    fake.fault("cut")
    with pytest.raises(AsrError) as err:
        await funasr_asr(fake).transcribe(SPEECH)
    assert err.value.reason == "closed"


async def test_wrong_auth_at_a_proxy(fake, monkeypatch, caplog):
    monkeypatch.setenv("FUNASR_TOKEN", "secret-token-99")
    fake.fault("reject_401")
    with pytest.raises(AsrError) as err, caplog.at_level(logging.DEBUG):
        await funasr_asr(fake, api_key_env="FUNASR_TOKEN").transcribe(SPEECH)
    # websockets logs handshake headers at DEBUG; the server's own lines (the fake's) are not ours
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith("websockets.server")]
    assert ours and not any("secret-token" in line for line in ours)
    assert err.value.reason == "auth" and err.value.status == 401 and "secret-token" not in str(err.value)
    fake.say("好的")
    assert await funasr_asr(fake, api_key_env="FUNASR_TOKEN").transcribe(SPEECH) == "好的"
    assert fake.connections[-1].authorization == "Bearer secret-token-99"


@pytest.mark.parametrize("fault", ["garbage", "no_text"])
async def test_malformed_frames(fake, fault):
    fake.fault(fault)
    with pytest.raises(AsrError) as err:
        await funasr_asr(fake).transcribe(SPEECH)
    assert err.value.reason == "bad_response"


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    """(certificate PEM, server SSLContext): a self-signed certificate for
    127.0.0.1, like the one FunASR's runtime image serves wss with."""
    d = tmp_path_factory.mktemp("tls")
    key, pem = d / "key.pem", d / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(pem), "-days", "2", "-subj", "/CN=funasr",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pem), str(key))
    return str(pem), ctx


async def test_wss_with_a_self_signed_certificate(self_signed):
    pem, ctx = self_signed
    with FakeFunAsr(default_text="好的", ssl=ctx) as server:
        plain = server.url.replace("wss://", "ws://")
        with pytest.raises(AsrError) as err:   # not trusted: refused, and said why
            await create("asr", {"type": "funasr", "url": plain, "ssl": True}).transcribe(SPEECH)
        assert err.value.reason == "connection" and "CERTIFICATE_VERIFY_FAILED" in str(err.value)
        trusted = create("asr", {"type": "funasr", "url": plain, "ssl": True, "ssl_ca": pem})
        assert await trusted.transcribe(SPEECH) == "好的"
        unverified = create("asr", {"type": "funasr", "url": server.url, "ssl_verify": False})
        assert await unverified.transcribe(SPEECH) == "好的"
