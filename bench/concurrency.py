"""Many devices at once: real WebSockets, real-time Opus both ways, per N sessions.

The load (bench/load_clients.py, a process of its own, because one Python
process cannot drive 200 devices and a server on two cores without each
disturbing the other's timing): each device streams 60 ms Opus frames in
real time, a ~2 s spoken question, then silence until the reply has
ended, then the question again. The question and the silence carry a faint
microphone noise floor (NOISE_RMS, as in the turn-taking section): real
devices never send digital zeros, and a server that skips work on silence
must show it on a real floor.

`run_concurrency` runs this server in this process with the issue's
providers: its real listener (Opus decode, silero VAD end of turn), ASR
answering 0.1 s after the turn (or, with `asr="funasr"`, a remote
streaming ASR: testkit's FunASR runtime server in a process of its own,
every utterance streamed to it over a WebSocket of its own from the
turn's start, its final text 80 ms after the end of speech; with
`asr="whisper"`, the default local recogniser, Whisper base in this
process as the default config sets it: the local talkers' figure), the
scripted model (its own process) at
once, and a fixed 1.8 s TTS tone, so the CPU goes to the server's own
work. Lateness is the Pacer's own record of every downstream frame (how
long after its scheduled time it left) beside the devices' view of it.

`run_compare` drives any xiaozhi server URL with the same load (the stock
xiaozhi-server too) and prints the same figures from the devices' side;
the server's RSS and CPU only when its pid is given.

RSS per session is the server's peak RSS during the run minus its RSS
before the first device connected (the models already loaded), over N.
"""
import asyncio
import contextlib
import functools
import gc
import multiprocessing
import os
import threading
import time

import numpy as np

from xiaozhi_server import config as configmod

from .device import opus_frames
from .fakes import ScriptedAsr, ToneTts
from .funasr_process import FunAsrProcess
from .llm_process import LlmProcess
from .load_clients import FRAME_S, GRACE_S, run_clients
from .report import Figure, ms, percentile
from .rig import BenchServer, bench_config
from .speech import say, silence
from .turns import NOISE_RMS

QUESTION = "Can you tell me a short story about a cat?"
ANSWER = "😊 Sure, here is a story."
REPLY_MS = 1800
ASR_DELAY_S = 0.1
FUNASR_FINAL_DELAY_S = 0.08
LAG_TICK_S = 0.01
RSS_TICK_S = 0.5
RAMP_PER_SESSION_S = 0.025
MAX_RAMP_S = 10.0
QUIET_LOOP_MS = 960      # 16 frames of noise floor, sent round and round
NOISE_SEED = 15

# The targets at 200 sessions.
MAX_FIRST_P50_S = 1.0
MAX_FIRST_P99_S = 1.5
MAX_LATE_MS = 20.0
MAX_MB_PER_SESSION = 2.0
RSS_TARGET_FROM = 50     # fewer sessions: the per-session share is mostly allocator noise


def _machine_busy():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def rss_mb(pid):
    """Resident memory of a process in MB (VmRSS), or None if it cannot be read."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def _stat_cpu_s(path):
    """User + system CPU seconds from a /proc stat file, or None if it is gone."""
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """CPU seconds a process has used, all its threads, or None."""
    return _stat_cpu_s("/proc/%d/stat" % pid)


def thread_cpu():
    """CPU seconds of this process's threads, summed by name (xiaozhi-vad,
    xiaozhi-upstream, ...; the event loop is the process's own name)."""
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    out = {}
    for tid in os.listdir("/proc/self/task"):
        cpu = _stat_cpu_s("/proc/self/task/%s/stat" % tid)
        if cpu is None:
            continue
        key = "loop" if tid == str(os.getpid()) else names.get(tid, "other").split("_")[0]
        out[key] = out.get(key, 0.0) + cpu
    return out


@functools.lru_cache(maxsize=1)
def load_packets():
    """The question's Opus frames and a short loop of quiet frames, both with
    the noise floor (synthesized and encoded once; the devices send the quiet
    frames round and round)."""
    rng = np.random.default_rng(NOISE_SEED)

    def floored(pcm):
        x = np.frombuffer(pcm, dtype="<i2") + rng.standard_normal(len(pcm) // 2) * NOISE_RMS
        return np.clip(x, -32768, 32767).astype("<i2").tobytes()
    return opus_frames(floored(say(QUESTION))), opus_frames(floored(silence(QUIET_LOOP_MS)))


async def _loop_lag(samples, stop):
    """How late the event loop wakes a 10 ms timer: its own busyness."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(LAG_TICK_S)
        now = time.monotonic()
        samples.append((now, now - t - LAG_TICK_S))


async def _rss_peak(pid, peak, stop):
    while not stop.is_set():
        value = rss_mb(pid)
        if value is not None:
            peak[0] = max(peak[0], value)
        await asyncio.sleep(RSS_TICK_S)


async def drive(url, sessions, seconds, token=None, pid=None):
    """Run the load process against `url`; its totals plus, while it ran,
    this process's loop lag, CPU figures and (with a pid) the server's RSS."""
    speech, quiet = load_packets()
    ramp_s = min(MAX_RAMP_S, sessions * RAMP_PER_SESSION_S)
    ctx = multiprocessing.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=run_clients, name="bench-load", daemon=True,
                       args=(child, url, sessions, seconds, ramp_s, speech, quiet, token))
    if pid is not None:
        gc.collect()
    rss0 = rss_mb(pid) if pid is not None else None
    lag, peak, stop = [], [rss0 or 0.0], asyncio.Event()
    tasks = [asyncio.create_task(_loop_lag(lag, stop))]
    if pid is not None:
        tasks.append(asyncio.create_task(_rss_peak(pid, peak, stop)))
    cpu0, busy0, t0 = os.times(), _machine_busy(), time.monotonic()
    server0 = proc_cpu_s(pid) if pid is not None else None
    proc.start()
    deadline = t0 + ramp_s + seconds + GRACE_S + 60
    while not conn.poll():
        if not proc.is_alive() or time.monotonic() > deadline:
            proc.kill()
            stop.set()
            raise RuntimeError("the load process %s" % ("died" if proc.exitcode else "ran over its time limit"))
        await asyncio.sleep(0.2)
    result = conn.recv()
    cpu1, busy1, wall = os.times(), _machine_busy(), time.monotonic() - t0
    server1 = proc_cpu_s(pid) if server0 is not None else None
    stop.set()
    await asyncio.gather(*tasks)
    proc.join(5)
    if "failed" in result:
        raise RuntimeError(result["failed"])
    result.update(ramp_s=ramp_s, t0=t0, wall=wall, lag=lag, rss0=rss0, rss_peak=peak[0] if pid is not None else None,
                  self_cpu=(cpu1.user - cpu0.user + cpu1.system - cpu0.system) / wall,
                  machine=(busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]),
                  server_cpu=(server1 - server0) / wall if server1 is not None else None)
    return result


def _device_figures(n, r, server_rss):
    """What the devices saw, the same for any server."""
    first = r["first_audio"]
    asked = len(first) + r["failed_turns"]
    held = "%d connected%s" % (r["connected"], ", %d could not (%s)" % (r["error_count"], "; ".join(r["errors"][:2]))
                               if r["error_count"] else "")
    lates = [ms(x) for x in r["lates"]]
    out = [
        Figure("N=%d: sessions connected" % n, r["connected"], "", limit=n, better="higher", note=held),
        Figure("  first audio p50", percentile(first, 50), "s", limit=MAX_FIRST_P50_S, better="le",
               note="end of question -> first reply frame at the device, %d turns" % len(first)),
        Figure("  first audio p99", percentile(first, 99), "s", limit=MAX_FIRST_P99_S, better="le"),
        Figure("  failed turns", r["failed_turns"], "", limit=0, better="le",
               note="of %d asked: no reply audio within 10 s" % asked),
        Figure("  frame lateness p99, at the device", percentile(lates, 99), "ms",
               note="%d frames of %d replies; worst %.0f ms" % (len(lates), r["replies"], max(lates or [0.0]))),
        Figure("  load process's own send lag, worst", ms(r["send_lag"]), "ms",
               note="the devices' clock: large means the figures above are the load's, not the server's"),
    ]
    if server_rss and r["rss_peak"] is not None:
        grown = max(0.0, r["rss_peak"] - r["rss0"])
        out += [
            Figure("  RSS of the server, peak", r["rss_peak"], "MB", note="%.0f MB before the devices came" % r["rss0"]),
            Figure("  RSS per session", grown / n, "MB", limit=MAX_MB_PER_SESSION if n >= RSS_TARGET_FROM else None,
                   better="le", note="(peak - before) / N"),
        ]
    return out


def _config(llm_url):
    cfg = bench_config(llm_url)
    # BENCH_VAD_GATE=off: every window to silero, for a before/after of the gate.
    if os.environ.get("BENCH_VAD_GATE", "on") == "off":
        cfg["vad"] = dict(cfg["vad"], gate=False)
    return cfg


async def _run_ours(n, seconds, llm_url, remote_asr=None, whisper=False):
    cfg = _config(llm_url)
    if remote_asr is not None:
        cfg["asr"] = remote_asr.config()
        asr = None      # built from the config, as a deployment's is
    elif whisper:
        cfg["asr"] = dict(configmod.DEFAULTS["asr"])    # the shipped default: base, beam 5, among zh/en
        asr = None
    else:
        asr = ScriptedAsr(QUESTION, delay=ASR_DELAY_S)
    async with BenchServer(cfg, record_frames=True, asr=asr, tts=ToneTts(ms=REPLY_MS)) as srv:
        if whisper:
            await srv.services.asr.warm_up()     # the model loaded before the clock starts
        batcher = getattr(srv.services.vad, "batcher", None)
        calls0, windows0, heard0 = (batcher.calls, batcher.windows, batcher.heard) if batcher else (0, 0, 0)
        load_packets()            # Piper speaks the question before the threads' clocks start
        threads0 = thread_cpu()
        r = await drive(srv.url, n, seconds, pid=os.getpid())
        threads1 = thread_cpu()
        deadline = time.monotonic() + 10.0
        while srv.services.sessions and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        services = srv.services
        pacing = services.pacing()
        up_dropped = sum(s.listener.dropped for s in services.seen if s.listener is not None)
        marks = [m for m in services.turn_marks() if m.get("first_audio") is not None and m.get("heard") is not None]
    lates = [ms(x) for p in pacing for _t, x in p.lates]
    lag = [ms(x) for _t, x in r["lag"]]
    figures = _device_figures(n, r, server_rss=True)
    figures.insert(5, Figure("  frame lateness p99, server pacer", percentile(lates, 99), "ms",
                             limit=MAX_LATE_MS, better="le",
                             note="%d frames; worst %.0f ms; %d pacer underruns" % (
                                 len(lates), max(lates or [0.0]), sum(p.underruns for p in pacing))))
    stages = [("ASR", "ended", "heard"), ("model", "heard", "first_text"), ("TTS, encode, pace", "first_text", "first_audio")]
    figures += [
        Figure("  server: turn decided -> first frame sent p50",
               percentile([ms(m["first_audio"] - m["ended"]) for m in marks], 50), "ms",
               note="; ".join("%s %.0f ms" % (name, percentile([ms(m[b] - m[a]) for m in marks if m.get(a) and m.get(b)], 50))
                              for name, a, b in stages)),
        Figure("  event-loop lag p99", percentile(lag, 99), "ms",
               note="10 ms timer overshoot; max %.0f ms; %d upstream frames dropped" % (max(lag or [0.0]), up_dropped)),
        Figure("  CPU, server process", 100.0 * r["self_cpu"], "%",
               note="100 %% = one core; machine %.0f %% of %d cores; load process %.0f %%" % (
                   100.0 * r["machine"], os.cpu_count() or 0, 100.0 * r["cpu"])),
        Figure("  CPU by thread", None, "", note=", ".join(
            "%s %.0f %%" % (name, 100.0 * (threads1[name] - threads0.get(name, 0.0)) / r["wall"])
            for name in sorted(threads1, key=lambda k: threads0.get(k, 0.0) - threads1[k])
            if threads1[name] - threads0.get(name, 0.0) >= 0.01 * r["wall"])),
    ]
    # CPU per second of audio a session sent: what one more session costs,
    # and unlike a share of the wall clock, not lowered when others starve us.
    audio_s = max(1e-9, r["sent"] * FRAME_S)
    vad_cpu = threads1.get("xiaozhi-vad", 0.0) - threads0.get("xiaozhi-vad", 0.0)
    figures.append(Figure("  server CPU per session-second", 1000.0 * r["self_cpu"] * r["wall"] / audio_s, "ms",
                          note="VAD thread (Opus decode, VAD) %.2f ms; %.0f s of device audio" % (
                              1000.0 * vad_cpu / audio_s, audio_s)))
    if batcher is not None and batcher.calls > calls0:
        figures.append(Figure("  VAD windows per model call", (batcher.windows - windows0) / (batcher.calls - calls0),
                              "", note="every session's windows judged together; the model judged %.0f %% of "
                              "the windows, its gate the rest" % (
                                  100.0 * (batcher.windows - windows0) / max(1, batcher.heard - heard0))))
    return figures


async def run_concurrency(sessions=(1, 10, 50, 100, 200), seconds=30.0, asr="scripted"):
    figures = []
    with contextlib.ExitStack() as stack:
        llm = stack.enter_context(LlmProcess(ANSWER))
        remote = None
        if asr == "funasr":
            remote = stack.enter_context(FunAsrProcess(QUESTION, final_delay_s=FUNASR_FINAL_DELAY_S))
            figures.append(Figure("ASR", None, "", note="FunASR runtime fake, 2pass, streamed, final +%d ms"
                                  % (1000 * FUNASR_FINAL_DELAY_S)))
        if asr == "whisper":
            figures.append(Figure("ASR", None, "", note="Whisper base int8 in this process: %s" % (
                configmod.DEFAULTS["asr"],)))
        for n in sessions:
            figures += await _run_ours(n, seconds, llm.base_url, remote, whisper=asr == "whisper")
    return figures


async def run_compare(url, sessions=(1, 10, 50), seconds=30.0, pid=None, token=None):
    figures = []
    for n in sessions:
        r = await drive(url, n, seconds, token=token, pid=pid)
        figures += _device_figures(n, r, server_rss=pid is not None)
        if r["server_cpu"] is not None:
            # A busy machine (other work) starves any server: read the machine's share beside it.
            figures.append(Figure("  CPU, server process", 100.0 * r["server_cpu"], "%",
                                  note="100 %% = one core; machine %.0f %% of %d cores; load process %.0f %%" % (
                                      100.0 * r["machine"], os.cpu_count() or 0, 100.0 * r["cpu"])))
            audio_s = max(1e-9, r["sent"] * FRAME_S)
            figures.append(Figure("  server CPU per session-second", 1000.0 * r["server_cpu"] * r["wall"] / audio_s,
                                  "ms", note="the same figure as the concurrency section's; %.0f s of device audio"
                                  % audio_s))
        await asyncio.sleep(2.0)   # the server closes the last run's sessions
    return figures
