"""The same load against one and against two worker processes (server.workers).

Both runs are the same shape, a primary with a pool of k workers
(shard/pool.py), so only k changes. Each worker has the issue's providers,
as the concurrency section has them in-process: its real listener (Opus
decode, silero VAD, end of turn), ASR answering 0.1 s after the turn
(scripted), the scripted model in its own process and a 1.8 s tone for
TTS. The load is the concurrency section's (bench/load_clients.py, its own
process) and so are the devices' figures; beside them, each worker's CPU
and peak RSS.

    python -m bench.workers [N ...]      (default 100)
"""
import asyncio
import time

from xiaozhi_server.services import Services
from xiaozhi_server.shard.pool import WorkerPool

from .concurrency import ANSWER, ASR_DELAY_S, QUESTION, REPLY_MS, _device_figures, drive
from .fakes import ScriptedAsr, ToneTts
from .llm_process import LlmProcess
from .report import Figure
from .rig import bench_config

SECONDS = 30.0


def services(config):
    """What each worker builds (the pool's services_factory)."""
    return Services(config, asr=ScriptedAsr(QUESTION, delay=ASR_DELAY_S), tts=ToneTts(ms=REPLY_MS))


def _proc_figures(pid):
    """(cpu seconds, peak RSS MB) of one process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    cpu = (int(rest[11]) + int(rest[12])) / 100.0
    peak = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) // 1024
    return cpu, peak


async def _one(k, sessions, llm_url):
    cfg = bench_config(llm_url)
    pool = WorkerPool(cfg, k, with_mcp=False, services_factory="bench.workers:services")
    await pool.start()
    try:
        pids = list(pool.pids().values())
        cpu0, t0 = [_proc_figures(p)[0] for p in pids], time.monotonic()
        r = await drive("ws://127.0.0.1:%d%s" % (pool.port, cfg["server"]["ws_path"]), sessions, SECONDS)
        wall = time.monotonic() - t0
        figs = [_proc_figures(p) for p in pids]
    finally:
        await pool.stop()
    cpu = [100.0 * (c - c0) / wall for (c, _), c0 in zip(figs, cpu0)]
    rss = [peak for _c, peak in figs]
    label = "%d worker%s" % (k, "s" if k > 1 else "")
    devices = _device_figures(sessions, r, server_rss=False)
    devices[0].name = "%s, %s" % (label, devices[0].name)
    return devices + [
        Figure("  CPU per worker", max(cpu), "%", note=", ".join("%.0f" % c for c in cpu) + " (100 % = one core)"),
        Figure("  peak RSS per worker", max(rss), "MB", note=", ".join(str(x) for x in rss)),
        Figure("  CPU, whole machine", 100.0 * r["machine"], "%", note="other work on the machine included")]


async def run_workers(sessions=(100,)):
    figures = []
    with LlmProcess(ANSWER) as llm:
        for n in sessions:
            for k in (1, 2):
                figures += await _one(k, n, llm.base_url)
    return figures


if __name__ == "__main__":
    import sys
    from .report import table
    counts = tuple(int(a) for a in sys.argv[1:]) or (100,)
    print(table("workers: the concurrency load against 1 and 2 worker processes", asyncio.run(run_workers(counts))))
