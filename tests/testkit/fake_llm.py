"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1.

It is a real HTTP server in a thread of its own (testkit/threaded_server.py),
so it works the same from sync and async tests and through the real
`openai` client:

    from testkit.fake_llm import FakeLLM

    with FakeLLM() as llm:                      # or: llm = FakeLLM().start() ... llm.stop()
        llm.reply("Hello! How are you?")        # one scripted turn per request, in order
        llm.reply_tool_calls(("self_get_device_status", {}),
                             ("get_weather", {"city": "Paris"}))
        llm.fail(500, "model overloaded")       # an HTTP error with an OpenAI error body
        llm.reply("Slow.", first_token_delay=0.5, chunk_delay=0.02)
        client = AsyncOpenAI(base_url=llm.base_url, api_key="test")
        ...
        llm.requests[0].tools      # names of the tools offered in request 0
        llm.requests[0].messages   # the messages sent
        llm.requests[0].disconnected  # True if the client closed the stream early
        assert llm.pending == 0    # every scripted turn was used

A turn answers a streaming request (`"stream": true`) with SSE chunks
(`data: {...}` lines, then `data: [DONE]`): text is split into small
deltas, and each tool call's JSON arguments are split across several
chunks, as real servers do. A non-streaming request gets one
`chat.completion` object. When the script is empty the server answers
HTTP 500 "no scripted reply", so an unexpected request fails loudly;
`llm.default_reply = "..."` answers every unscripted request instead.
`llm.base_url` ends in /v1; `llm.env()` gives OPENAI_BASE_URL,
OPENAI_API_KEY and OPENAI_MODEL for a subprocess.
"""
import asyncio
import json
import threading
import time

from aiohttp import web

from testkit.threaded_server import ThreadedHttpServer

__all__ = ["FakeLLM", "Turn", "Recorded"]


class Turn:
    """One scripted answer: text and/or tool calls, or an HTTP error."""

    def __init__(self, text="", tool_calls=(), status=200, error=None,
                 first_token_delay=0.0, chunk_delay=0.0, finish_reason=None):
        self.text = text
        self.tool_calls = list(tool_calls)  # [(name, arguments dict or raw str)]
        self.status = status
        self.error = error
        self.first_token_delay = first_token_delay
        self.chunk_delay = chunk_delay
        self.finish_reason = finish_reason or ("tool_calls" if self.tool_calls else "stop")


class Recorded:
    """A request the server received."""

    def __init__(self, path, headers, body):
        self.path = path
        self.headers = headers
        self.body = body
        self.disconnected = False

    @property
    def messages(self):
        return self.body.get("messages", [])

    @property
    def tools(self):
        return [t.get("function", {}).get("name") for t in self.body.get("tools") or []]

    @property
    def stream(self):
        return bool(self.body.get("stream"))

    @property
    def model(self):
        return self.body.get("model")


def _text_pieces(text):
    """Split text into deltas of a few characters (word-ish, CJK per 2 chars)."""
    pieces, cur = [], ""
    for ch in text:
        cur += ch
        if ch == " " or len(cur) >= 4:
            pieces.append(cur)
            cur = ""
    if cur:
        pieces.append(cur)
    return pieces


def _arg_pieces(raw):
    step = max(1, len(raw) // 3 + 1)
    return [raw[i:i + step] for i in range(0, len(raw), step)] or [""]


def _error(status, message, type_, **extra):
    return web.json_response({"error": dict({"message": message, "type": type_}, **extra)}, status=status)


class _Handler:
    """The Chat Completions endpoints of one FakeLLM."""

    def __init__(self, fake):
        self.fake = fake

    async def get(self, request):
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": [{"id": self.fake.model, "object": "model"}]})
        if request.path.rstrip("/") == "/health" and self.fake.slots is not None:
            return web.json_response({"status": "ok"})      # llama.cpp's server is up
        if request.path.rstrip("/") == "/slots" and self.fake.slots is not None:
            # llama.cpp's server: one entry per slot, `is_processing` while it decodes a request.
            return web.json_response([{"id": i, "is_processing": busy} for i, busy in enumerate(self.fake.slots)])
        return _error(404, "not found", "invalid_request_error")

    async def post(self, request):
        fake = self.fake
        raw = await request.read()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_invalid_json": raw.decode("utf-8", "replace")}
        rec = Recorded(request.path_qs, dict(request.headers), body)
        fake._record(rec)
        if not request.path.rstrip("/").endswith("/chat/completions"):
            return _error(404, "unknown path %s" % request.path_qs, "invalid_request_error")
        turn = fake._next_turn(rec)
        if turn is None:
            return _error(500, "no scripted reply", "server_error")
        if turn.status != 200:
            return _error(turn.status, turn.error or "error", "server_error", code=turn.status)
        try:
            if body.get("stream"):
                return await self._stream(request, rec, turn, body)
            if turn.first_token_delay:
                await asyncio.sleep(turn.first_token_delay)
            return web.json_response(self._completion(turn, body))
        except asyncio.CancelledError:
            rec.disconnected = True     # the client went away mid-answer
            raise

    def _tool_call_objs(self, turn):
        calls = []
        for i, (name, args) in enumerate(turn.tool_calls):
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            calls.append({"id": "call_%d_%d" % (self.fake.request_count, i), "type": "function",
                          "function": {"name": name, "arguments": raw}})
        return calls

    def _completion(self, turn, body):
        msg = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            msg["tool_calls"] = self._tool_call_objs(turn)
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", self.fake.model),
                "choices": [{"index": 0, "message": msg, "finish_reason": turn.finish_reason}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    async def _stream(self, request, rec, turn, body):
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        resp.force_close()
        await resp.prepare(request)
        model = body.get("model", self.fake.model)
        first = [True]

        async def chunk(delta, finish=None):
            if first[0]:
                first[0] = False
                if turn.first_token_delay:
                    await asyncio.sleep(turn.first_token_delay)
            elif turn.chunk_delay:
                await asyncio.sleep(turn.chunk_delay)
            obj = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            await resp.write(b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n")

        try:
            await chunk({"role": "assistant", "content": ""})
            for piece in _text_pieces(turn.text):
                await chunk({"content": piece})
            for i, call in enumerate(self._tool_call_objs(turn)):
                fn = call["function"]
                await chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": fn["name"], "arguments": ""}}]})
                for piece in _arg_pieces(fn["arguments"]):
                    await chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            await chunk({}, turn.finish_reason)
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except ConnectionError:
            rec.disconnected = True     # the client closed the stream early: seen at the next write
        return resp


class FakeLLM(ThreadedHttpServer):
    name = "fake-llm"

    def __init__(self, model="fake-model"):
        self.model = model
        self.requests = []
        self.default_reply = None
        self.slots = None       # [busy, ...]: answer llama.cpp's GET /slots (the local model's host)
        self._script = []
        self._answers = []      # (words, Turn): for requests whose last user message holds the words
        self._lock = threading.Lock()

    # --- scripting -------------------------------------------------
    def reply(self, text, **timing):
        """Queue a text answer. timing: first_token_delay, chunk_delay (seconds)."""
        self._script.append(Turn(text=text, **timing))
        return self

    def clear(self):
        """Drop every scripted turn and answer not used yet (a shared server between tests)."""
        with self._lock:
            self._script.clear()
            self._answers.clear()

    def reply_tool_calls(self, *calls, text="", **timing):
        """Queue an answer calling tools: each call is (name, arguments dict or raw JSON str)."""
        self._script.append(Turn(text=text, tool_calls=calls, **timing))
        return self

    def answer(self, words, turn):
        """Answer every request whose last user message contains `words` with
        the Turn (before the queue): devices sharing one model each get their own.
        `words` "": every request that ends with the child's words, whatever was heard."""
        with self._lock:
            self._answers.append((words.lower(), turn))
        return self

    def fail(self, status, message="error"):
        """Queue an HTTP error answer with an OpenAI-style error body."""
        self._script.append(Turn(status=status, error=message))
        return self

    def script(self, turn):
        """Queue a prepared Turn."""
        self._script.append(turn)
        return self

    @property
    def pending(self):
        with self._lock:
            return len(self._script)

    @property
    def request_count(self):
        with self._lock:
            return len(self.requests)

    def _record(self, rec):
        with self._lock:
            self.requests.append(rec)

    def _next_turn(self, rec=None):
        with self._lock:
            if rec is not None and self._answers:
                # Only a request that ends with the child's words: the one after a
                # tool's result gets the queue's answer (or the default).
                msgs = rec.messages if isinstance(rec.body.get("messages"), list) else []
                last = msgs[-1] if msgs and isinstance(msgs[-1], dict) else {}
                if last.get("role") == "user":
                    said = str(last.get("content") or "").lower()
                    for words, turn in self._answers:
                        if words in said:
                            return turn
            if self._script:
                return self._script.pop(0)
        return Turn(text=self.default_reply) if self.default_reply is not None else None

    # --- lifecycle -------------------------------------------------
    def _routes(self, app):
        h = _Handler(self)
        app.router.add_get("/{tail:.*}", h.get)
        app.router.add_post("/{tail:.*}", h.post)

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.port

    def env(self):
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "test-key", "OPENAI_MODEL": self.model}

    def wait_for_requests(self, n, timeout=5.0):
        """Block until `n` requests have arrived (True) or the timeout passes (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.request_count >= n:
                return True
            time.sleep(0.01)
        return self.request_count >= n
