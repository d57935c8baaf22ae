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

from .llm_process import ServerProcess


def _serve(conn, text, final_delay_s):
    from testkit.fake_funasr import FakeFunAsr
    server = FakeFunAsr(default_text=text, final_delay_s=final_delay_s).start()
    conn.send(server.port)
    try:
        conn.recv()          # any message, or the parent going away, stops the server
    except EOFError:
        pass
    conn.send(len(server.connections))
    server.stop()


class FunAsrProcess(ServerProcess):
    target = _serve
    name = "bench-fake-funasr"

    def __init__(self, text, final_delay_s=0.08):
        super().__init__(text, final_delay_s)

    @property
    def connections(self):
        """After exit: how many utterances it heard."""
        return self.served

    @property
    def url(self):
        return "ws://127.0.0.1:%d" % self.port

    def config(self):
        """The server's `asr` section for it."""
        return {"type": "funasr", "url": self.url, "mode": "2pass"}
