"""Many devices at once: real WebSockets on loopback, real-time Opus both ways.

The server (this process) runs its real listener (Opus decode, silero VAD
end of turn) for every session; ASR answers after a cloud-like 0.1 s
sleep, the scripted model (its own process) answers at once, and TTS is a
fixed tone, so the CPU goes to the server's own work: decoding, VAD,
resampling, encoding and pacing. The devices run in a separate process
(load_clients), because one Python process cannot drive 200 devices and
the server on two cores without each disturbing the other's timing.

Lateness is the Pacer's own record of every downstream frame: how long
after its scheduled time it left. The devices report what their speaker
would hear: gaps where a frame arrived after the previous one had played.
"""
import asyncio
import multiprocessing
import os
import time

from .device import opus_frames
from .fakes import ScriptedAsr, ToneTts
from .llm_process import LlmProcess
from .load_clients import GRACE_S, run_clients
from .report import Figure, ms, percentile
from .rig import BenchServer, bench_config
from .speech import say, silence

QUESTION = "Can you tell me a story about a cat?"
ANSWER = "😊 Sure, here is a story."
REPLY_MS = 1800
ASR_DELAY_S = 0.1
LAG_TICK_S = 0.01
SETTLED_S = 3.0          # after the ramp, before the steady-state figures start
MAX_LATE_MS = 20.0


def _machine_busy():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


async def _loop_lag(samples, stop):
    """How late the server's event loop wakes a 10 ms timer: its own busyness."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(LAG_TICK_S)
        now = time.monotonic()
        samples.append((now, now - t - LAG_TICK_S))


async def _wait_result(conn, proc, limit_s, services):
    deadline = time.monotonic() + limit_s
    while not conn.poll():
        if not proc.is_alive() or time.monotonic() > deadline:
            proc.kill()
            return {"failed": "the load process %s" % ("died" if proc.exitcode else "ran over its time limit")}
        await asyncio.sleep(0.2)
    return conn.recv()


async def _drained(services, limit_s=10.0):
    deadline = time.monotonic() + limit_s
    while services.sessions and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def run_concurrency(sessions=200, seconds=30.0):
    packets = opus_frames(say(QUESTION) + silence(600))
    ramp_s = min(10.0, sessions * 0.025)
    with LlmProcess(ANSWER) as llm:
        async with BenchServer(bench_config(llm.base_url), record_frames=True,
                               asr=ScriptedAsr(QUESTION, delay=ASR_DELAY_S), tts=ToneTts(ms=REPLY_MS)) as srv:
            ctx = multiprocessing.get_context("spawn")
            conn, child = ctx.Pipe()
            proc = ctx.Process(target=run_clients, name="bench-load", daemon=True,
                               args=(child, srv.server.ws.port, srv.server.ws.path, sessions, seconds, ramp_s,
                                     packets[:-1], packets[-1]))
            lag, stop = [], asyncio.Event()
            lag_task = asyncio.create_task(_loop_lag(lag, stop))
            cpu0, busy0, t0 = os.times(), _machine_busy(), time.monotonic()
            proc.start()
            result = await _wait_result(conn, proc, ramp_s + seconds + GRACE_S + 60, srv.services)
            cpu1, busy1, wall = os.times(), _machine_busy(), time.monotonic() - t0
            stop.set()
            await lag_task
            proc.join(5)
            await _drained(srv.services)
            services = srv.services
            pacing = services.pacing()
            up_dropped = sum(s.listener.dropped for s in services.seen if s.listener is not None)
    if "failed" in result:
        raise RuntimeError(result["failed"])
    steady = t0 + ramp_s + SETTLED_S
    lates = [ms(x) for p in pacing for _t, x in p.lates]
    steady_lates = [ms(x) for p in pacing for t, x in p.lates if t >= steady]
    steady_lag = [ms(x) for t, x in lag if t >= steady]
    sent = sum(p.frames for p in pacing)
    server_cpu = 100.0 * (cpu1.user - cpu0.user + cpu1.system - cpu0.system) / wall
    machine = 100.0 * (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
    held_note = "%d requested, %d connected%s" % (
        sessions, result["connected"],
        ", %d failed (%s)" % (result["error_count"], "; ".join(result["errors"][:2])) if result["error_count"] else "")
    return [
        Figure("sessions held at once", services.peak_sessions, "", limit=sessions, better="higher", note=held_note),
        Figure("replies heard by the devices", result["replies"], "",
               note="%.0f s of real-time audio each way, after a %.0f s ramp" % (seconds, ramp_s)),
        Figure("worst downstream frame lateness", max(lates or [0.0]), "ms", limit=MAX_LATE_MS, better="le",
               note="Pacer records, %d frames, whole run" % len(lates)),
        Figure("p99 downstream frame lateness", percentile(lates, 99), "ms"),
        Figure("frames later than %.0f ms" % MAX_LATE_MS, sum(1 for x in lates if x > MAX_LATE_MS), ""),
        Figure("  steady state: worst lateness", max(steady_lates or [0.0]), "ms",
               note="%d frames from %.0f s after the ramp on" % (len(steady_lates), SETTLED_S)),
        Figure("  steady state: p99 lateness", percentile(steady_lates, 99), "ms"),
        Figure("downstream frames dropped", sent - result["frames"], "",
               note="%d sent, %d received" % (sent, result["frames"])),
        Figure("upstream frames dropped (server queue full)", up_dropped, "",
               note="%d sent by the devices" % result["sent"]),
        Figure("pacer underruns (audio not ready in time)", sum(p.underruns for p in pacing), ""),
        Figure("playback gaps at the devices", result["gaps"], "",
               note="worst %.0f ms; device clocks share the client process" % ms(result["worst_gap"])),
        Figure("server event-loop lag p99", percentile([ms(x) for _t, x in lag], 99), "ms",
               note="10 ms timer overshoot; max %.0f ms" % max([ms(x) for _t, x in lag] or [0.0])),
        Figure("  steady state: event-loop lag p99", percentile(steady_lag, 99), "ms",
               note="max %.0f ms" % max(steady_lag or [0.0])),
        Figure("client send lag, worst", ms(result["send_lag"]), "ms", note="the load process's own delay"),
        Figure("CPU, server process", server_cpu, "%", note="100 % = one core"),
        Figure("CPU, load process", 100.0 * result["cpu"], "%"),
        Figure("CPU, whole machine", machine, "%", note="100 %% = all %d cores" % (os.cpu_count() or 0)),
    ]
