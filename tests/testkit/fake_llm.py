"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1.

It is a real HTTP server (a thread running http.server), so it works the
same from sync and async tests and through the real `openai` client:

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
import http.server
import json
import threading
import time

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


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.fake.model, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_invalid_json": raw.decode("utf-8", "replace")}
        rec = Recorded(self.path, dict(self.headers), body)
        fake._record(rec)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "unknown path %s" % self.path, "type": "invalid_request_error"}})
            return
        turn = fake._next_turn(rec)
        if turn is None:
            self._json(500, {"error": {"message": "no scripted reply", "type": "server_error"}})
            return
        if turn.status != 200:
            self._json(turn.status, {"error": {"message": turn.error or "error", "type": "server_error",
                                               "code": turn.status}})
            return
        try:
            if body.get("stream"):
                self._stream(turn, body)
            else:
                if turn.first_token_delay:
                    time.sleep(turn.first_token_delay)
                self._json(200, self._completion(turn, body))
        except (BrokenPipeError, ConnectionResetError):
            rec.disconnected = True
            self.close_connection = True

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _tool_call_objs(self, turn):
        calls = []
        for i, (name, args) in enumerate(turn.tool_calls):
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            calls.append({"id": "call_%d_%d" % (self.server.fake.request_count, i), "type": "function",
                          "function": {"name": name, "arguments": raw}})
        return calls

    def _completion(self, turn, body):
        msg = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            msg["tool_calls"] = self._tool_call_objs(turn)
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", self.server.fake.model),
                "choices": [{"index": 0, "message": msg, "finish_reason": turn.finish_reason}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def _stream(self, turn, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.flush()
        model = body.get("model", self.server.fake.model)
        first = [True]

        def chunk(delta, finish=None):
            if first[0]:
                first[0] = False
                if turn.first_token_delay:
                    time.sleep(turn.first_token_delay)
            elif turn.chunk_delay:
                time.sleep(turn.chunk_delay)
            obj = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        for piece in _text_pieces(turn.text):
            chunk({"content": piece})
        for i, call in enumerate(self._tool_call_objs(turn)):
            fn = call["function"]
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                   "function": {"name": fn["name"], "arguments": ""}}]})
            for piece in _arg_pieces(fn["arguments"]):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        chunk({}, turn.finish_reason)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(http.server.ThreadingHTTPServer):
    # The stdlib's listen backlog of 5 drops connections when hundreds of
    # sessions ask at once (bench concurrency): the client then waits for
    # a TCP retransmission, seconds that are no one's latency.
    request_queue_size = 1024


class FakeLLM:
    def __init__(self, model="fake-model"):
        self.model = model
        self.requests = []
        self.default_reply = None
        self._script = []
        self._answers = []      # (words, Turn): for requests whose last user message holds the words
        self._lock = threading.Lock()
        self._server = None
        self._thread = None

    # --- scripting -------------------------------------------------
    def reply(self, text, **timing):
        """Queue a text answer. timing: first_token_delay, chunk_delay (seconds)."""
        self._script.append(Turn(text=text, **timing))
        return self

    def clear(self):
        """Drop every scripted turn not used yet (a shared server between tests)."""
        with self._lock:
            self._script.clear()

    def reply_tool_calls(self, *calls, text="", **timing):
        """Queue an answer calling tools: each call is (name, arguments dict or raw JSON str)."""
        self._script.append(Turn(text=text, tool_calls=calls, **timing))
        return self

    def answer(self, words, turn):
        """Answer every request whose last user message contains `words` with
        the Turn (before the queue): devices sharing one model each get their own."""
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
                last = str(last.get("content") or "").lower() if last.get("role") == "user" else ""
                for words, turn in self._answers:
                    if words in last:
                        return turn
            if self._script:
                return self._script.pop(0)
        return Turn(text=self.default_reply) if self.default_reply is not None else None

    # --- lifecycle -------------------------------------------------
    def start(self):
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._server.server_address[1]

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
