"""Volcengine (Doubao) streaming ASR against a local server speaking its
binary WebSocket framing (testkit.fake_volcengine), the classic (/api/v2/asr,
cluster) and the big-model service (/api/v3/sauc/bigmodel, resource_id):
gzipped JSON request, audio packets as the child speaks, partials, the
final text on the negative sequence, and each failure as one AsrError with
a clear line, after which the fallback chain's next recognizer hears the
same audio."""
import asyncio
import logging
import socket

import pytest

from testkit import audio
from testkit.fake_volcengine import FakeVolcengine
from testkit.local_net import unused_port
from xiaozhi_server.providers import create
from xiaozhi_server.providers.asr.base import AsrError, open_stream

SPEECH = audio.tone(220, 2400, 16000)   # 2.4 s: four 600 ms pieces of text
PIECE = 1920                            # 60 ms, as the listener gets audio
TOKEN = "volc-secret-token-7"


@pytest.fixture(scope="module")
def server():
    with FakeVolcengine(token=TOKEN, access_key=TOKEN) as fake:
        yield fake


@pytest.fixture
def volc(server):
    server._script.clear()
    yield server


def classic(volc, **extra):
    return create("asr", dict({"type": "volcengine", "url": volc.url + "/api/v2/asr", "appid": "1234",
                               "token": TOKEN, "cluster": "volcengine_streaming_common",
                               "final_timeout": 5}, **extra))


def bigmodel(volc, **extra):
    return create("asr", dict({"type": "volcengine", "url": volc.url + "/api/v3/sauc/bigmodel", "appid": "1234",
                               "token": TOKEN, "resource_id": "volc.bigasr.sauc.duration",
                               "final_timeout": 5}, **extra))


async def speak(stream):
    for i in range(0, len(SPEECH), PIECE):
        await stream.push(SPEECH[i:i + PIECE])
    return await stream.finish()


@pytest.mark.parametrize("service", [classic, bigmodel])
async def test_partials_then_the_final_text(volc, service):
    volc.say("今天天气怎么样", "今天天气怎么样？")
    partials = []
    assert await speak(open_stream(service(volc), "zh", partials.append)) == "今天天气怎么样？"
    assert partials == ["今天", "今天天气", "今天天气怎么", "今天天气怎么样", "今天天气怎么样？"]
    conn = volc.connections[-1]
    assert bytes(conn.audio) == SPEECH and conn.ended
    assert set(conn.packets[:-1]) == {6400}   # 200 ms packets, the last one the rest
    req = conn.request
    assert req["audio"]["rate"] == 16000 and req["audio"]["bits"] == 16 and req["request"]["result_type"] == "full"
    if service is classic:
        assert req["app"] == {"appid": "1234", "token": TOKEN, "cluster": "volcengine_streaming_common"}
        assert req["audio"]["language"] == "zh-CN" and conn.headers["Authorization"] == "Bearer; " + TOKEN
    else:
        assert "app" not in req and req["request"]["model_name"] == "bigmodel"
        assert (conn.headers["X-Api-App-Key"], conn.headers["X-Api-Access-Key"],
                conn.headers["X-Api-Resource-Id"]) == ("1234", TOKEN, "volc.bigasr.sauc.duration")


async def test_partials_arrive_while_the_child_speaks(volc):
    volc.say("我想听故事")
    two = asyncio.Event()
    heard = []

    def on_partial(text):
        heard.append(text)
        if len(heard) == 2:
            two.set()

    stream = open_stream(classic(volc), on_partial=on_partial)
    await stream.push(SPEECH[:19200 * 2 + 6400])   # 1.4 s: a 200 ms packet stays back until more comes
    await asyncio.wait_for(two.wait(), 10)
    assert heard == ["我想", "我想听故"] and not volc.connections[-1].ended
    await stream.cancel()


async def test_token_from_the_environment(volc, monkeypatch):
    monkeypatch.setenv("DOUBAO_TOKEN", TOKEN)
    volc.say("好的")
    assert await classic(volc, token=None, token_env="DOUBAO_TOKEN").transcribe(SPEECH) == "好的"


def test_config_is_checked():
    with pytest.raises(ValueError, match="cluster .* or resource_id"):
        create("asr", {"type": "volcengine", "appid": "1", "token": "t"})
    assert create("asr", {"type": "volcengine", "appid": "1", "resource_id": "r"}).url.endswith("/api/v3/sauc/bigmodel")


class Backup:
    """The recognizer behind the service in a chain (Whisper in a deployment)."""

    async def transcribe(self, pcm16k, language=None):
        return "我在听"


async def expect_failure(make_asr, reason, caplog, said, volc=None, fault=None):
    """The failure is one AsrError saying what happened; in a chain it is one
    warning line and the next recognizer answers. The token is in neither."""
    for attempt in ("alone", "chained"):
        if fault:
            volc.fault(fault)
        asr = make_asr()
        if attempt == "alone":
            with pytest.raises(AsrError) as err:
                await asr.transcribe(SPEECH)
            assert err.value.reason == reason and said in str(err.value), err.value
            assert TOKEN not in str(err.value)
            continue
        chain = create("asr", {"type": "fallback", "providers": [asr, Backup()]})
        with caplog.at_level(logging.DEBUG):
            assert await speak(open_stream(chain, "zh")) == "我在听"
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno >= logging.WARNING and r.name.startswith("xiaozhi_server")]
    assert len(warnings) == 1 and "ASR volcengine failed" in warnings[0] and said in warnings[0], warnings
    assert TOKEN not in caplog.text


async def test_wrong_token_gets_the_error_frame(volc, caplog):
    await expect_failure(lambda: classic(volc, token="wrong-token"), "auth", caplog, "error 1002: auth failed")
    assert "wrong-token" not in caplog.text


async def test_wrong_key_refused_at_the_handshake(volc, caplog):
    await expect_failure(lambda: bigmodel(volc, token="wrong-key"), "auth", caplog, "HTTP 401")


async def test_service_down(caplog):
    url = "ws://127.0.0.1:%d/api/v2/asr" % unused_port()
    await expect_failure(lambda: create("asr", {"type": "volcengine", "url": url, "appid": "1", "token": TOKEN,
                                                "cluster": "c"}), "connection", caplog, url)


async def test_handshake_never_answered(caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        url = "ws://127.0.0.1:%d/api/v2/asr" % s.getsockname()[1]
        await expect_failure(lambda: create("asr", {"type": "volcengine", "url": url, "appid": "1", "token": TOKEN,
                                                    "cluster": "c", "connect_timeout": 0.3}),
                             "timeout", caplog, "could not connect")


@pytest.mark.parametrize("fault, reason, said", [
    ("silent", "timeout", "no final text 0.3 s after the end of speech"),
    ("cut", "closed", "closed the connection"),
    ("garbage", "bad_response", "a text frame, not the binary protocol"),
    ("malformed", "bad_response", "payload size"),
    ("server_error", "refused", "error 1022: server busy"),
])
async def test_service_failures(volc, caplog, fault, reason, said):
    # Only the silent service waits out a short timeout: the others must say
    # what went wrong however long a loaded machine takes to say it.
    wait = 0.3 if fault == "silent" else 30
    await expect_failure(lambda: classic(volc, final_timeout=wait), reason, caplog, said, volc, fault)


async def test_the_fallback_chain_hears_the_audio_again(volc):
    """A failed service: the next recognizer (here the same service again, up
    this time) gets the whole utterance."""
    volc.fault("server_error").say("讲个故事吧")
    chain = create("asr", {"type": "fallback", "retry_after_s": 0, "providers": [
        {"type": "volcengine", "name": "doubao", "url": volc.url + "/api/v2/asr", "appid": "1", "token": TOKEN,
         "cluster": "c"},
        {"type": "volcengine", "name": "doubao-big", "url": volc.url + "/api/v3/sauc/bigmodel", "appid": "1",
         "token": TOKEN, "resource_id": "r"}]})
    assert await speak(open_stream(chain, "zh")) == "讲个故事吧"
    assert bytes(volc.connections[-1].audio) == SPEECH and volc.connections[-1].path == "/api/v3/sauc/bigmodel"
