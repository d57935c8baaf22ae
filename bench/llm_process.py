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
import time

START_TIMEOUT_S = 30
MAX_SCRIPTED = 20000   # requests answered with the delay; later ones answer at once


def _serve(conn, text, first_token_delay):
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


class ServerProcess:
    """A fake server in a child process: `target(conn, *args)` sends its
    port on `conn`, waits for any message (or the parent going away), sends
    back a count of what it served and stops."""

    target = None
    name = "bench-fake"

    def __init__(self, *args):
        self.args = args
        self.port = None
        self.served = None    # after exit: the count the server sent back
        self._proc = None
        self._conn = None

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=type(self).target, args=(child,) + self.args, name=self.name, daemon=True)
        self._proc.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._conn.poll(0.1):
            if not self._proc.is_alive() or time.monotonic() > deadline:
                self._proc.kill()
                raise RuntimeError("%s did not start (exit code %s)" % (self.name, self._proc.exitcode))
        self.port = self._conn.recv()
        return self

    def __exit__(self, *exc):
        try:
            self._conn.send("stop")
            if self._conn.poll(10):
                self.served = self._conn.recv()
        except (BrokenPipeError, EOFError, OSError):
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()


class LlmProcess(ServerProcess):
    target = _serve
    name = "bench-fake-llm"

    def __init__(self, text, first_token_delay=0.0):
        super().__init__(text, first_token_delay)

    @property
    def requests(self):
        return self.served

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.port
