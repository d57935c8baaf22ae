"""The OpenAI-compatible LLM provider against the scripted fake server, through the real openai client."""
import asyncio
import contextlib

import pytest
from openai import OpenAI

from testkit.fake_llm import FakeLLM
from xiaozhi_server.providers import create
from xiaozhi_server.providers.llm.none import choose_llm
from xiaozhi_server.providers.llm.sse import sse_data

TOOLS = [
    {"type": "function", "function": {"name": "self_audio_speaker_set_volume", "description": "set volume",
                                      "parameters": {"type": "object", "properties": {"volume": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "get_weather", "description": "weather",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
]


@pytest.fixture
def llm_server():
    with FakeLLM() as server:
        yield server


def provider(server, **extra):
    return create("llm", dict({"type": "openai", "base_url": server.base_url, "api_key": "k", "model": "m"}, **extra))


async def collect(llm, messages, tools=None):
    return [e async for e in llm.stream_chat(messages, tools)]


async def test_text_streams_as_deltas_then_done(llm_server):
    llm_server.reply("Hello there! I am your friend.")
    events = await collect(provider(llm_server), [{"role": "user", "content": "hi"}])
    texts = [e.text for e in events if e.kind == "text"]
    assert len(texts) > 3 and "".join(texts) == "Hello there! I am your friend."
    assert events[-1].kind == "done" and events[-1].finish_reason == "stop"
    req = llm_server.requests[0]
    assert req.stream and req.model == "m" and req.messages[-1]["content"] == "hi"


async def test_parallel_tool_calls_are_assembled_from_split_arguments(llm_server):
    llm_server.reply_tool_calls(("self_audio_speaker_set_volume", {"volume": 40}),
                                ("get_weather", {"city": "北京 Beijing"}))
    events = await collect(provider(llm_server), [{"role": "user", "content": "quiet, and weather?"}], TOOLS)
    calls = [e for e in events if e.kind == "tool_call"]
    assert [(c.name, c.arguments) for c in calls] == [
        ("self_audio_speaker_set_volume", {"volume": 40}), ("get_weather", {"city": "北京 Beijing"})]
    assert calls[0].id != calls[1].id
    assert events[-1].kind == "done" and events[-1].finish_reason == "tool_calls"
    assert llm_server.requests[0].tools == ["self_audio_speaker_set_volume", "get_weather"]


async def test_invalid_tool_arguments_are_reported_not_raised(llm_server):
    llm_server.reply_tool_calls(("get_weather", '{"city": "Par'))
    events = await collect(provider(llm_server), [{"role": "user", "content": "x"}], TOOLS)
    call = [e for e in events if e.kind == "tool_call"][0]
    assert call.arguments is None and "invalid tool arguments" in call.error


async def test_http_error_becomes_typed_event(llm_server):
    llm_server.fail(503, "model overloaded")
    events = await collect(provider(llm_server), [{"role": "user", "content": "x"}])
    assert len(events) == 1 and events[0].kind == "error"
    assert events[0].reason == "http" and events[0].status == 503 and "overloaded" in events[0].message


async def test_slow_first_token_times_out_as_event(llm_server):
    llm_server.reply("late", first_token_delay=1.5)
    events = await collect(provider(llm_server, first_token_timeout=0.3), [{"role": "user", "content": "x"}])
    assert events[-1].kind == "error" and events[-1].reason == "timeout"


async def test_unreachable_endpoint_is_connection_error():
    llm = create("llm", {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    events = await collect(llm, [{"role": "user", "content": "x"}])
    assert events[-1].kind == "error" and events[-1].reason == "connection"


async def test_cancelling_the_consumer_closes_the_stream(llm_server):
    llm_server.reply("word " * 200, chunk_delay=0.02)
    llm = provider(llm_server)
    got = []

    async def consume():
        async with contextlib.aclosing(llm.stream_chat([{"role": "user", "content": "story"}])) as events:
            async for e in events:
                got.append(e)

    task = asyncio.create_task(consume())
    while len(got) < 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The server notices the closed connection on its next write.
    for _ in range(100):
        if llm_server.requests[0].disconnected:
            break
        await asyncio.sleep(0.02)
    assert llm_server.requests[0].disconnected
    assert len(got) < 50


def test_fake_server_works_from_sync_code_non_streaming(llm_server):
    llm_server.reply("plain answer")
    llm_server.reply_tool_calls(("get_weather", {"city": "Oslo"}))
    client = OpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0)
    r1 = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    r2 = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}], tools=TOOLS)
    assert r1.choices[0].message.content == "plain answer"
    assert r2.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert llm_server.pending == 0 and llm_server.request_count == 2


def test_unscripted_request_fails_loudly(llm_server):
    client = OpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0)
    with pytest.raises(Exception, match="no scripted reply"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])


async def test_none_provider_speaks_the_not_configured_line_in_the_childs_language(monkeypatch):
    for k in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    llm = choose_llm({})
    assert llm.type_name == "none"
    en = await collect(llm, [{"role": "user", "content": "tell me a story"}])
    zh = await collect(llm, [{"role": "user", "content": "给我讲个故事"}])
    assert en[0].text == "No language model is configured on the server." and en[-1].kind == "done"
    assert "语言模型" in zh[0].text


def test_environment_selects_the_openai_provider(monkeypatch, llm_server):
    for k, v in llm_server.env().items():
        monkeypatch.setenv(k, v)
    llm = choose_llm({})
    assert llm.type_name == "openai" and llm.base_url == llm_server.base_url and llm.model == "fake-model"


async def test_settings_and_extra_body_reach_the_server_as_json(llm_server):
    llm_server.reply("ok")
    events = await collect(provider(llm_server, temperature=0.2, extra_body={"enable_thinking": False}),
                           [{"role": "user", "content": "x"}])
    assert events[-1].kind == "done"
    body = llm_server.requests[0].body
    assert body["temperature"] == 0.2 and body["enable_thinking"] is False and body["stream"] is True


async def test_sse_events_are_the_same_however_the_body_is_cut():
    body = (b": keep-alive comment\r\n\r\n"
            b"data: {\"a\": 1}\r\n\r\n"
            b"event: message\nid: 7\ndata: {\"b\":\ndata:  2}\n\n"
            b"data: [DONE]\r\r")
    want = ['{"a": 1}', '{"b":\n 2}', "[DONE]"]

    async def cut(size):
        for i in range(0, len(body), size):
            yield body[i:i + size]

    for size in (1, 2, 3, 7, len(body)):
        assert [d async for d in sse_data(cut(size))] == want, size


async def _serve_once(chunks):
    """A real HTTP server answering one request with an SSE body of `chunks`."""
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        for c in chunks:
            writer.write(c)
            await writer.drain()
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, "http://127.0.0.1:%d/v1" % server.sockets[0].getsockname()[1]


async def test_an_error_in_the_stream_ends_it_with_a_bad_response_event():
    text = b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
    error = b'data: {"error": {"message": "upstream model crashed"}}\n\n'
    server, url = await _serve_once([text, error])
    async with server:
        events = await collect(create("llm", {"type": "openai", "base_url": url, "model": "m"}),
                               [{"role": "user", "content": "x"}])
    assert [e.kind for e in events] == ["text", "error"]
    assert events[1].reason == "bad_response" and "upstream model crashed" in events[1].message


async def test_a_stream_cut_without_done_still_ends_with_done_and_its_tool_call():
    parts = [b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", '
             b'"function": {"name": "get_weather", "arguments": "{\\"city\\""}}]}}]}\n\n',
             b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, '
             b'"function": {"arguments": ": \\"Oslo\\"}"}}]}}]}\n\n']
    server, url = await _serve_once(parts)
    async with server:
        events = await collect(create("llm", {"type": "openai", "base_url": url, "model": "m"}),
                               [{"role": "user", "content": "x"}], TOOLS)
    assert [e.kind for e in events] == ["tool_call", "done"]
    assert events[0].id == "c1" and events[0].arguments == {"city": "Oslo"}
