"""testkit's FunASR runtime server (its WebSocket protocol, 2pass results),
in a process of its own, as a remote streaming ASR for the benchmarks.

The server under measurement streams every utterance to it over loopback
WebSockets; running it in this process would put its protocol work on
the server's GIL, which a real remote recognizer never is. It hears
`text` in every utterance (streaming pieces while the audio comes, the
final text `final_delay_s` after the end of speech: the offline pass).

    with FunAsrProcess("Can you tell me a story?", final_delay_s=0.08) as asr:
        asr.url             # ws://127.0.0.1:PORT
"""
import multiprocessing
import sys
import time

from .llm_process import START_TIMEOUT_S, TESTS


def _serve(conn, text, final_delay_s):
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from testkit.fake_funasr import FakeFunAsr
    server = FakeFunAsr(default_text=text, final_delay_s=final_delay_s).start()
    conn.send(server.port)
    try:
        conn.recv()          # any message, or the parent going away, stops the server
    except EOFError:
        pass
    conn.send(len(server.connections))
    server.stop()


class FunAsrProcess:
    def __init__(self, text, final_delay_s=0.08):
        self.text = text
        self.final_delay_s = final_delay_s
        self.port = None
        self.connections = None   # after exit: how many utterances it heard
        self._proc = None
        self._conn = None

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.text, self.final_delay_s),
                                 name="bench-fake-funasr", daemon=True)
        self._proc.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._conn.poll(0.1):
            if not self._proc.is_alive() or time.monotonic() > deadline:
                self._proc.kill()
                raise RuntimeError("the fake FunASR process did not start (exit code %s)" % self._proc.exitcode)
        self.port = self._conn.recv()
        return self

    def __exit__(self, *exc):
        try:
            self._conn.send("stop")
            if self._conn.poll(10):
                self.connections = self._conn.recv()
        except (BrokenPipeError, EOFError, OSError):
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()

    @property
    def url(self):
        return "ws://127.0.0.1:%d" % self.port

    def config(self):
        """The server's `asr` section for it."""
        return {"type": "funasr", "url": self.url, "mode": "2pass"}
