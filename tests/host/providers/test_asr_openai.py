"""OpenAI-compatible transcription against a local HTTP server answering
`POST /v1/audio/transcriptions` as OpenAI's API reference shows (multipart
form: file, model, language, prompt, response_format; JSON `{"text": ...}`
or plain text; errors as `{"error": {"message", "type"}}`), and what the
provider says when that server is down, slow, cut off, or talks garbage."""
import asyncio
import io
import logging
import wave

import pytest
from aiohttp import web

from testkit import audio
from testkit.local_net import serve, unused_port
from xiaozhi_server.providers import create
from xiaozhi_server.providers.asr.base import AsrError, open_stream

KEY = "sk-test-secret-4711"


@pytest.fixture
async def server():
    """(base_url, state): state["mode"] picks the answer, state["seen"] the requests."""
    state = {"mode": "ok", "seen": [], "release": asyncio.Event()}

    async def transcriptions(request):
        form = await request.post()
        upload = form["file"]
        with wave.open(io.BytesIO(upload.file.read()), "rb") as w:
            wav = (w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes())
        state["seen"].append({"fields": {k: v for k, v in form.items() if k != "file"}, "wav": wav,
                              "auth": request.headers.get("Authorization"), "filename": upload.filename})
        mode = state["mode"]
        if request.headers.get("Authorization") != "Bearer " + KEY or mode == "auth":
            return web.json_response({"error": {"message": "Incorrect API key provided",
                                                "type": "invalid_request_error", "code": "invalid_api_key"}},
                                     status=401)
        if mode == "slow":
            await state["release"].wait()
        if mode == "trickle":   # a byte at a time, each well within the read timeout
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            while not state["release"].is_set():
                await resp.write(b" ")
                await asyncio.sleep(0.05)
            return resp
        if mode == "cut":
            resp = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": "200"})
            await resp.prepare(request)
            await resp.write(b'{"text": "hal')
            request.transport.close()
            return resp
        if mode == "html":
            return web.Response(body=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if mode == "no_text":
            return web.json_response({"transcript": "hello"})
        if mode == "overloaded":
            return web.json_response({"error": {"message": "model is overloaded", "type": "server_error"}},
                                     status=503)
        seconds = wav[3] / wav[0]
        text = "你好小智，今天天气怎么样？" if form.get("language") == "zh" else "Hello there, %.1f s." % seconds
        if form.get("response_format") == "text":
            return web.Response(text=text + "\n", content_type="text/plain")
        if form.get("response_format") == "verbose_json":
            return web.json_response({"task": "transcribe", "language": form.get("language") or "english",
                                      "duration": seconds, "text": text, "segments": []})
        return web.json_response({"text": text})

    app = web.Application()
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    runner, url = await serve(app)
    yield url + "/v1", state
    state["release"].set()
    await runner.cleanup()


def asr(url, **extra):
    return create("asr", dict({"type": "openai", "base_url": url, "api_key": KEY, "timeout": 5}, **extra))


SPEECH = audio.tone(220, 1500, 16000)


async def test_uploads_a_16k_wav_with_the_documented_fields(server):
    url, state = server
    text = await asr(url, model="whisper-large-v3-turbo", prompt="小智").transcribe(SPEECH, language="zh")
    assert text == "你好小智，今天天气怎么样？"
    seen = state["seen"][0]
    assert seen["wav"] == (16000, 1, 2, 24000) and seen["filename"] == "utterance.wav"
    assert seen["fields"] == {"model": "whisper-large-v3-turbo", "language": "zh", "prompt": "小智",
                              "response_format": "json"}
    assert seen["auth"] == "Bearer " + KEY


@pytest.mark.parametrize("fmt", ["text", "verbose_json"])
async def test_text_and_verbose_answers(server, fmt):
    url, _ = server
    assert await asr(url, response_format=fmt).transcribe(SPEECH) == "Hello there, 1.5 s."


async def test_the_stream_interface_sends_the_whole_utterance_at_finish(server):
    url, state = server
    stream = open_stream(asr(url), language="en")
    for i in range(0, len(SPEECH), 1920):   # 60 ms pieces, as the listener gets them
        await stream.push(SPEECH[i:i + 1920])
    assert state["seen"] == []
    assert await stream.finish() == "Hello there, 1.5 s." and len(state["seen"]) == 1


async def test_too_short_audio_is_not_sent(server):
    url, state = server
    assert await asr(url).transcribe(bytes(1000)) == "" and state["seen"] == []


async def test_key_from_the_environment_never_in_logs(server, monkeypatch, caplog):
    url, state = server
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leave")
    caplog.set_level(logging.DEBUG)
    provider = create("asr", {"type": "openai", "base_url": url, "api_key_env": "GROQ_API_KEY"})
    assert await provider.transcribe(SPEECH) == "Hello there, 1.5 s."
    state["mode"] = "auth"
    with pytest.raises(AsrError) as err:
        await provider.transcribe(SPEECH)
    assert KEY not in str(err.value) and KEY not in repr(provider)
    assert KEY not in caplog.text and "sk-openai" not in caplog.text
    # Another host never gets OPENAI_API_KEY: without a key of its own it sends none.
    monkeypatch.delenv("GROQ_API_KEY")
    state["mode"] = "ok"
    with pytest.raises(AsrError):
        await create("asr", {"type": "openai", "base_url": url}).transcribe(SPEECH)
    assert state["seen"][-1]["auth"] == "Bearer none"


async def test_service_down():
    port = unused_port()
    with pytest.raises(AsrError) as err:
        await asr("http://127.0.0.1:%d/v1" % port).transcribe(SPEECH)
    assert err.value.reason == "connection" and "127.0.0.1:%d" % port in str(err.value)


async def test_slow_first_byte_times_out(server):
    url, state = server
    state["mode"] = "slow"
    with pytest.raises(AsrError) as err:
        await asr(url, timeout=0.3).transcribe(SPEECH)
    assert err.value.reason == "timeout"


async def test_an_answer_trickling_in_still_has_a_deadline(server):
    url, state = server
    state["mode"] = "trickle"
    with pytest.raises(AsrError) as err:
        await asr(url, timeout=0.3, connect_timeout=0.2).transcribe(SPEECH)
    assert err.value.reason == "timeout"


async def test_cut_stream(server):
    url, state = server
    state["mode"] = "cut"
    with pytest.raises(AsrError) as err:
        await asr(url).transcribe(SPEECH)
    assert err.value.reason == "closed"


async def test_wrong_auth(server, caplog):
    url, _ = server
    caplog.set_level(logging.DEBUG)   # the provider's own line; the pipeline logs the warning
    with pytest.raises(AsrError) as err:
        await asr(url, api_key="sk-wrong").transcribe(SPEECH)
    assert err.value.reason == "auth" and err.value.status == 401
    assert "Incorrect API key provided" in str(err.value) and "sk-wrong" not in str(err.value)
    assert "openai ASR auth: HTTP 401" in caplog.text and "sk-wrong" not in caplog.text


@pytest.mark.parametrize("mode", ["html", "no_text"])
async def test_malformed_answers(server, mode):
    url, state = server
    state["mode"] = mode
    with pytest.raises(AsrError) as err:
        await asr(url).transcribe(SPEECH)
    assert err.value.reason == "bad_response"


async def test_other_error_status_keeps_the_servers_message(server):
    url, state = server
    state["mode"] = "overloaded"
    with pytest.raises(AsrError, match="HTTP 503.*model is overloaded") as err:
        await asr(url).transcribe(SPEECH)
    assert err.value.reason == "refused"
