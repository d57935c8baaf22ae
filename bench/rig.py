"""A real server on 127.0.0.1 (ephemeral ports) with the providers a benchmark chooses.

`MeasuredServices` is the server's Services with two measuring habits:
it keeps every session it saw (their `turn_log` outlives the connection),
and it keeps the pacing figures of every reply, including replies cut
short, because each new reply resets the speaker's Pacer.
"""
import logging

from xiaozhi_server import config as configmod
from xiaozhi_server.server import XiaozhiServer
from xiaozhi_server.services import Services


def bench_config(llm_url):
    cfg = configmod.merge(configmod.DEFAULTS, {})
    cfg["server"].update(host="127.0.0.1", ws_port=0, http_port=0)
    cfg["llm"] = {"type": "openai", "base_url": llm_url, "api_key": "bench", "model": "fake-model"}
    cfg["asr"]["language"] = "en"
    cfg["session"]["language"] = "en"
    cfg["session"]["idle_timeout_s"] = 3600
    if "apps" in cfg:
        # Chat speaks first on entry; a short line keeps each device's start quick.
        cfg["apps"]["opener_lines"] = {"en": ["Hi!"], "zh": ["你好！"]}
    return cfg


class ReplyPacing:
    """What the Pacer saw during one reply."""

    __slots__ = ("frames", "underruns", "max_late", "lates")   # lates: (sent_at, seconds late)

    def __init__(self, pacer):
        self.frames = pacer.frames
        self.underruns = pacer.underruns
        self.max_late = pacer.max_late
        self.lates = [(sent, late) for sent, _ahead, late in pacer.records]


class MeasuredServices(Services):
    def __init__(self, config, record_frames=False, **providers):
        super().__init__(config, **providers)
        self.record_frames = record_frames
        self.seen = []
        self.replies = []
        self.peak_sessions = 0

    async def on_session_ready(self, session):
        await super().on_session_ready(session)
        self._keep_pacing(session.speaker)
        self.seen.append(session)
        self.peak_sessions = max(self.peak_sessions, len(self.sessions))

    def _keep_pacing(self, speaker):
        """Each reply has its own pacer: keep its figures when the reply ends."""
        speaker.record = self.record_frames

        def keep(pacer):
            if pacer.frames:
                self.replies.append(ReplyPacing(pacer))
        speaker.on_reply_end = keep

    def pacing(self):
        """Figures of every reply so far, the ones still in a pacer included."""
        live = [s.speaker.pacer for s in self.seen if s.speaker.speaking and s.speaker.pacer is not None]
        return self.replies + [ReplyPacing(p) for p in live if p.frames]

    def turn_marks(self):
        """Marks of the turns that followed spoken words (not openers), in order."""
        return [m for s in self.seen for m in s.turn_log if m.get("ended") is not None]


class BenchServer:
    """async with BenchServer(config, asr=..., tts=...) as srv: srv.url, srv.services"""

    def __init__(self, config, record_frames=False, **providers):
        self.services = MeasuredServices(config, record_frames=record_frames, **providers)
        self.server = XiaozhiServer(config, services=self.services, with_broker=False, with_mcp=False)

    async def __aenter__(self):
        # The server's per-turn info lines would flood the benchmark's output.
        logging.getLogger("xiaozhi_server").setLevel(logging.WARNING)
        await self.server.start()
        return self

    async def __aexit__(self, *exc):
        await self.server.stop()

    @property
    def url(self):
        ws = self.server.ws
        return "ws://127.0.0.1:%d%s" % (ws.port, ws.path)
