"""The same load against one and against two worker processes (server.workers).

Both runs are the same shape, a primary with a pool of k workers
(shard/pool.py), so only k changes. Each worker has the issue's providers,
as the concurrency section has them in-process: its real listener (Opus
decode, silero VAD, end of turn), ASR answering 0.1 s after the turn
(scripted; with `--asr funasr` the concurrency section's remote
streaming ASR, one FunASR fake process for all workers), the scripted
model in its own process and a 1.8 s tone for TTS. The load is the concurrency section's (bench/load_clients.py, its own
process) and so are the devices' figures; beside them, each worker's CPU
and peak RSS.

    make bench ARGS="workers [--sessions 50,100] [--seconds 30] [--asr funasr]"
    python -m bench.workers [N ...]      (default 100)
"""
import asyncio
import contextlib
import os
import time

from xiaozhi_server.services import Services
from xiaozhi_server.shard.pool import WorkerPool

from .concurrency import ANSWER, ASR_DELAY_S, FUNASR_FINAL_DELAY_S, QUESTION, REPLY_MS, _device_figures, drive
from .fakes import ScriptedAsr, ToneTts
from .funasr_process import FunAsrProcess
from .llm_process import LlmProcess
from .report import Figure
from .rig import bench_config

SECONDS = 30.0


def services(config, **shared):
    """What each worker builds (the pool's services_factory, given the store's shared parts)."""
    return Services(config, asr=ScriptedAsr(QUESTION, delay=ASR_DELAY_S), tts=ToneTts(ms=REPLY_MS), **shared)


def remote_asr_services(config, **shared):
    """Each worker with the remote streaming ASR its config's `asr` names."""
    return Services(config, tts=ToneTts(ms=REPLY_MS), **shared)


def _proc_figures(pid):
    """(cpu seconds, seconds its threads waited for a core, peak RSS MB) of one process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    cpu = (int(rest[11]) + int(rest[12])) / 100.0
    waited = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                waited += int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            pass    # a thread that ended meanwhile
    peak = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) // 1024
    return cpu, waited, peak


async def _peak_sessions(pool, held):
    """The most sessions each worker reported at once (as /health lists them)."""
    while True:
        held[:] = [max(a, b) for a, b in zip(held, pool.sessions())]
        await asyncio.sleep(0.5)


async def _one(k, sessions, llm_url, seconds=SECONDS, remote_asr=None):
    cfg = bench_config(llm_url)
    factory = "bench.workers:services"
    if remote_asr is not None:
        cfg["asr"] = remote_asr.config()
        factory = "bench.workers:remote_asr_services"
    pool = WorkerPool(cfg, k, with_mcp=False, services_factory=factory)
    await pool.start()
    try:
        pids = list(pool.pids().values())
        before, t0 = [_proc_figures(p) for p in pids], time.monotonic()
        held = [0] * k
        sampling = asyncio.create_task(_peak_sessions(pool, held))
        try:
            r = await drive("ws://127.0.0.1:%d%s" % (pool.port, cfg["server"]["ws_path"]), sessions, seconds)
        finally:
            sampling.cancel()
        wall = time.monotonic() - t0
        after = [_proc_figures(p) for p in pids]
    finally:
        await pool.stop()
    cpu = [100.0 * (a[0] - b[0]) / wall for a, b in zip(after, before)]
    waited = [100.0 * (a[1] - b[1]) / wall for a, b in zip(after, before)]
    rss = [a[2] for a in after]
    label = "%d worker%s" % (k, "s" if k > 1 else "")
    devices = _device_figures(sessions, r, server_rss=False)
    devices[0].name = "%s, %s" % (label, devices[0].name)
    return devices + [
        Figure("  sessions per worker, most at once", max(held), "", note=", ".join(str(h) for h in held)),
        Figure("  CPU per worker", max(cpu), "%", note=", ".join("%.0f" % c for c in cpu) + " (100 % = one core)"),
        Figure("  waiting for a core, per worker", max(waited), "%",
               note=", ".join("%.0f" % w for w in waited) + " (its threads' run-queue time over the run; "
               "high: the machine starved it)"),
        Figure("  peak RSS per worker", max(rss), "MB", note=", ".join(str(x) for x in rss)),
        Figure("  CPU, whole machine", 100.0 * r["machine"], "%", note="other work on the machine included")]


async def run_workers(sessions=(100,), seconds=SECONDS, asr="scripted"):
    figures = []
    with contextlib.ExitStack() as stack:
        llm = stack.enter_context(LlmProcess(ANSWER))
        remote = None
        if asr == "funasr":
            remote = stack.enter_context(FunAsrProcess(QUESTION, final_delay_s=FUNASR_FINAL_DELAY_S))
        for n in sessions:
            for k in (1, 2):
                figures += await _one(k, n, llm.base_url, seconds, remote)
    return figures


if __name__ == "__main__":
    import sys
    from .report import table
    counts = tuple(int(a) for a in sys.argv[1:]) or (100,)
    print(table("workers: the concurrency load against 1 and 2 worker processes", asyncio.run(run_workers(counts))))
