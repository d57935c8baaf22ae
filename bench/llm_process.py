"""The scripted OpenAI-compatible LLM server, in a process of its own.

The benchmarks measure the server's event loop; an HTTP server thread in
the same process would compete with it for the GIL and blur the figures.
So the fake model (tests/testkit/fake_llm, real SSE over loopback HTTP)
runs in a child process and answers every request with `text`, its first
token `first_token_delay` seconds after the request, like a cloud model.

    with LlmProcess("😊 Sure.", first_token_delay=0.4) as llm:
        llm.base_url        # http://127.0.0.1:PORT/v1
"""
import multiprocessing
import pathlib
import sys
import time

TESTS = str(pathlib.Path(__file__).resolve().parents[1] / "tests")
START_TIMEOUT_S = 30
MAX_SCRIPTED = 20000   # requests answered with the delay; later ones answer at once


def _serve(conn, text, first_token_delay):
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from testkit.fake_llm import FakeLLM
    llm = FakeLLM()
    if first_token_delay:
        for _ in range(MAX_SCRIPTED):
            llm.reply(text, first_token_delay=first_token_delay)
    llm.default_reply = text
    llm.start()
    conn.send(llm.port)
    try:
        conn.recv()          # any message, or the parent going away, stops the server
    except EOFError:
        pass
    conn.send(llm.request_count)
    llm.stop()


class LlmProcess:
    def __init__(self, text, first_token_delay=0.0):
        self.text = text
        self.first_token_delay = first_token_delay
        self.port = None
        self.requests = None
        self._proc = None
        self._conn = None

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.text, self.first_token_delay),
                                 name="bench-fake-llm", daemon=True)
        self._proc.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._conn.poll(0.1):
            if not self._proc.is_alive() or time.monotonic() > deadline:
                self._proc.kill()
                raise RuntimeError("the fake LLM process did not start (exit code %s)" % self._proc.exitcode)
        self.port = self._conn.recv()
        return self

    def __exit__(self, *exc):
        try:
            self._conn.send("stop")
            if self._conn.poll(5):
                self.requests = self._conn.recv()
        except (BrokenPipeError, EOFError, OSError):
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.port
