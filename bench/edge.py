"""Slow and flooding clients against the real server (issue 12, items 1 and 9).

slow: an attacker process (edge_attack.py) keeps `slow_http` connections
that never finish their HTTP headers and `slow_ws` that never finish a
WebSocket handshake, opening each one again as soon as the server closes
it. Meanwhile this process asks /health and opens new voice sessions
(hello, the opener's first audio, a text turn's first audio), and counts
the server's file descriptors and the log it writes (every line the
server would print under `make run`, formatted and counted, not shown).
Target: /health and a new session's hello within 1 s.

flood: a device in the attacker process sends `abort` messages, then
binary frames, as fast as its socket takes them, reconnecting whenever it
is closed. Another device here opens a session and takes text turns; its
first audio is compared with the same turns without the flood.
"""
import asyncio
import logging
import multiprocessing
import os
import time

from .device import WireDevice
from .edge_attack import run_flood, run_slow
from .fakes import ScriptedAsr, ToneTts
from .llm_process import LlmProcess
from .report import Figure, ms, percentile
from .rig import BenchServer, bench_config

QUESTION = "What is your name?"
ANSWER = "😊 I am Xiaozhi."
HOST = "127.0.0.1"
PROBE_TIMEOUT_S = 20.0
ATTACK_LIMIT_S = 300.0       # the attacker stops by itself after this, whatever happens here
TARGET_S = 1.0
LOG_FORMAT = "%(asctime)s %(levelname).1s %(name)s: %(message)s"   # as `xiaozhi-server run`


class LogMeter(logging.Handler):
    """Counts what the server's log would hold, at the level `make run` logs at."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter(LOG_FORMAT))
        self.bytes = self.lines = 0

    def emit(self, record):
        self.bytes += len(self.format(record).encode("utf-8", "replace")) + 1
        self.lines += 1

    def __enter__(self):
        root = logging.getLogger()
        self._levels = (root.level, logging.getLogger("xiaozhi_server").level)
        root.setLevel(logging.INFO)
        logging.getLogger("xiaozhi_server").setLevel(logging.INFO)
        root.addHandler(self)
        return self

    def __exit__(self, *exc):
        root = logging.getLogger()
        root.removeHandler(self)
        root.setLevel(self._levels[0])
        logging.getLogger("xiaozhi_server").setLevel(self._levels[1])


def open_fds():
    return len(os.listdir("/proc/self/fd"))


class Attacker:
    """One attacker process; `await ready()`, then `await stop()` gives its totals."""

    def __init__(self, target, *args):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=target, args=(child,) + args, name="bench-attacker", daemon=True)
        self.proc.start()

    async def _recv(self, limit_s):
        deadline = time.monotonic() + limit_s
        while not self.conn.poll():
            if not self.proc.is_alive() or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("the attacker process %s" % ("died" if not self.proc.is_alive() else "hung"))
            await asyncio.sleep(0.05)
        return self.conn.recv()

    async def ready(self):
        return await self._recv(ATTACK_LIMIT_S)

    async def stop(self):
        self.conn.send("stop")
        totals = await self._recv(60)
        self.proc.join(10)
        return totals


async def _health(port):
    t = time.monotonic()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), PROBE_TIMEOUT_S)
    writer.write(b"GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), PROBE_TIMEOUT_S)
    writer.close()
    return time.monotonic() - t if answer.startswith(b"HTTP/1.1 200") else None


async def _session(url, name, turns):
    """(connect -> hello, hello -> opener's first audio, [question -> first reply audio])."""
    t0 = time.monotonic()
    dev = WireDevice(url, device_id=name, mcp=False)
    await asyncio.wait_for(dev.connect(), PROBE_TIMEOUT_S)
    try:
        await dev.hello(timeout=PROBE_TIMEOUT_S)
        hello = time.monotonic()
        await dev.wait_for(lambda: dev.audio, PROBE_TIMEOUT_S)
        opener = dev.audio[0][0] - hello
        await dev.wait_json("tts", state="stop", timeout=PROBE_TIMEOUT_S)
        replies = []
        for _ in range(turns):
            since = time.monotonic()
            await dev.detect(QUESTION)
            await dev.wait_for(lambda: dev.audio_between(since), PROBE_TIMEOUT_S)
            replies.append(next(t for t, _p in dev.audio if t >= since) - since)
            await dev.wait_json("tts", state="stop", timeout=PROBE_TIMEOUT_S, since=since)
        return hello - t0, opener, replies
    finally:
        await dev.close()


async def _slow(srv, slow_http, slow_ws, probes):
    server = srv.server
    fds0 = open_fds()
    with LogMeter() as meter:
        attacker = Attacker(run_slow, server.http.port, server.ws.port, slow_http, slow_ws, ATTACK_LIMIT_S)
        t0 = time.monotonic()
        await attacker.ready()
        health, hellos, openers, replies, fds = [], [], [], [], []
        for i in range(probes):
            health.append(await _health(server.http.port))
            fds.append(open_fds())
            if i % 4 == 0:
                hello, opener, turn = await _session(srv.url, "bench:edge-%d" % i, 1)
                hellos.append(hello)
                openers.append(opener)
                replies += turn
            await asyncio.sleep(0.1)
        totals = await attacker.stop()
        wall = time.monotonic() - t0
    http, ws = server.http.guard.stats, server.ws.guard.stats
    failed = sum(1 for h in health if h is None)
    health = [ms(h) for h in health if h is not None]
    return [
        Figure("slow connections the attacker held at once", totals["peak_open"], "", note="%d HTTP headers + %d WebSocket handshakes never finished; %d opened in %.0f s"
               % (slow_http, slow_ws, totals["opened"], wall)),
        Figure("  closed by the server", totals["closed_by_server"], "",
               note="HTTP: %d evicted, %d timed out, %d refused; WebSocket: %d evicted, %d timed out, %d refused"
               % (http.evicted, http.timed_out, http.refused, ws.evicted, ws.timed_out, ws.refused)),
        Figure("/health answer p50", percentile(health, 50), "ms", note="%d asked during the attack, %d failed"
               % (len(health) + failed, failed)),
        Figure("/health answer worst", max(health or [float("nan")]), "ms", limit=ms(TARGET_S), better="le"),
        Figure("new voice session: connect -> hello, worst", ms(max(hellos)), "ms", limit=ms(TARGET_S),
               better="le", note="%d sessions opened during the attack" % len(hellos)),
        Figure("new voice session: hello -> opener audio p50", ms(percentile(openers, 50)), "ms",
               note="the opener waits 0.3 s for a device task first"),
        Figure("new voice session: question -> reply audio, worst", ms(max(replies)), "ms", limit=ms(TARGET_S),
               better="le"),
        Figure("server file descriptors, peak", max(fds), "", note="%d before the attack; peak open HTTP %d, WS %d"
               % (fds0, http.peak_open, ws.peak_open)),
        Figure("log written during the attack", meter.bytes / 1024.0, "KB",
               note="%d lines in %.0f s" % (meter.lines, wall)),
    ]


async def _flooded(srv, kind, turns):
    """The other session's figures under one kind of flood."""
    stats = srv.server.ws.rate_stats
    dropped0 = stats.dropped_text + stats.dropped_binary
    passed0 = stats.passed_text + stats.passed_binary
    with LogMeter() as meter:
        attacker = Attacker(run_flood, srv.url, kind, ATTACK_LIMIT_S)
        t0 = time.monotonic()
        await attacker.ready()
        _hello, opener, replies = await _session(srv.url, "bench:edge-other-%s" % kind, turns)
        totals = await attacker.stop()
        wall = time.monotonic() - t0
    dropped = stats.dropped_text + stats.dropped_binary - dropped0
    passed = stats.passed_text + stats.passed_binary - passed0
    return [
        Figure("%s flood: other session's opener audio" % kind, ms(opener), "ms",
               note="%d %s messages sent in %.1f s; the server read %d, dropped %d"
               % (totals["sent"], kind, wall, dropped + passed, dropped)),
        Figure("%s flood: other session's reply audio p50" % kind, ms(percentile(replies, 50)), "ms"),
        Figure("%s flood: other session's reply audio worst" % kind, ms(max(replies)), "ms", limit=ms(TARGET_S),
               better="le", note="%d turns" % len(replies)),
        Figure("  flooding connections closed (1008)", totals["flood_closed"], "",
               note="; ".join(totals["close_reasons"])[:80]),
        Figure("  log written during the %s flood" % kind, meter.bytes / 1024.0, "KB",
               note="%d lines in %.1f s" % (meter.lines, wall)),
    ]


async def run_edge(slow_http=5000, slow_ws=1000, probes=20, turns=5):
    with LlmProcess(ANSWER) as llm:
        async with BenchServer(bench_config(llm.base_url), asr=ScriptedAsr(QUESTION), tts=ToneTts(ms=300)) as srv:
            await _session(srv.url, "bench:edge-warm-up", 1)     # the model's HTTP client, the codecs
            _h, opener, replies = await _session(srv.url, "bench:edge-calm", turns)
            figures = [
                Figure("no attack: opener audio", ms(opener), "ms", note="a new session, for comparison"),
                Figure("no attack: reply audio p50", ms(percentile(replies, 50)), "ms", note="%d turns" % len(replies)),
            ]
            figures += await _slow(srv, slow_http, slow_ws, probes)
            for kind in ("abort", "audio"):
                figures += await _flooded(srv, kind, turns)
    return figures
