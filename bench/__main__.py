"""python -m bench [--quick] [--sessions N,N,...] [section ...]

Sections: latency, local, cloud, turns, concurrency, cmodule, control, edge, voice, remote_asr
(default: all),
and compare: `compare --url ws://host:port/xiaozhi/v1/ [--sessions 1,10,50] [--pid PID]
[--token T]` drives any xiaozhi server with the concurrency section's load;
workers: `workers [--sessions 100]` that load against 1 and 2 worker processes;
`concurrency --asr funasr`: the concurrency load with a remote streaming ASR;
fleet: three nodes on network namespaces (root): failover, schedules once, nodes;
wake: what the nearest-device arbitration adds to a wake word (SQLite, PostgreSQL);
safety: the safety filter on its adversarial corpus (caught, harmless blocked).
asr_zh: a Chinese child's words (and English beside them) per local ASR configuration.
local_llm: the offline chat model (make run prepares it): first audio, children carried at once.
Each prints a table of figures with their targets beside them. A missed
target is printed as MISSED, never raised: only a section that could not
run at all makes the exit status non-zero.
"""
import argparse
import asyncio
import subprocess
import sys
import time
import traceback

from . import report

SECTIONS = ("latency", "local", "cloud", "turns", "concurrency", "cmodule", "control", "edge", "voice",
            "remote_asr")
# never part of "all": compare needs a URL, workers doubles a long run, fleet needs root
ON_REQUEST = ("compare", "workers", "fleet", "wake", "safety", "asr_zh", "local_llm")
TITLES = {
    "latency": "1. pipeline overhead, instant providers",
    "local": "2. default local providers, per stage",
    "cloud": "3. cloud-like providers",
    "turns": "4. turn-taking on utterances with pauses",
    "concurrency": "5. concurrent sessions over loopback WebSockets",
    "edge": "8. slow and flooding clients at the edge",
    "control": "7. control plane: a burst of API calls to one device",
    "voice": "9. offline voices: Chinese read back by Whisper, ASR per utterance length",
    "remote_asr": "10. one child: a remote streaming ASR against Whisper in-process",
    "compare": "another xiaozhi server under the concurrency load",
    "workers": "the concurrency load against 1 and 2 worker processes",
    "fleet": "three nodes on their own hosts: failover, schedules once, load per node",
    "wake": "nearest device answers: what arbitration adds to a wake word",
    "safety": "the safety filter on its own adversarial corpus (bench/safety_corpus.json)",
    "asr_zh": "hearing a Chinese child: CER, real-time factor and decode time per ASR configuration",
    "local_llm": "the offline chat model: one child's first audio, children carried at once (2.5 s)",
}
DEFAULT_SESSIONS = (1, 10, 50, 100, 200)
COMPARE_SESSIONS = (1, 10, 50)
CMODULE_TIMEOUT_S = 300


def sizes(args):
    """How big each section runs: --quick keeps the whole run to about 30 s."""
    q = args.quick
    return {
        "latency": {"turns": args.turns or (10 if q else 60)},
        "local": {"turns": 1 if q else 3},
        "cloud": {"devices": 2 if q else 4, "turns_per_device": 1 if q else 6},
        "turns": {"count": 8 if q else 24},
        "concurrency": {"sessions": args.sessions or ((10,) if q else DEFAULT_SESSIONS),
                        "seconds": args.seconds or (4.0 if q else 30.0), "asr": args.asr},
        "compare": {"url": args.url, "sessions": args.sessions or ((10,) if q else COMPARE_SESSIONS),
                    "seconds": args.seconds or (4.0 if q else 30.0), "pid": args.pid, "token": args.token},
        "workers": {"sessions": args.sessions or ((10,) if q else (100,)),
                    "seconds": args.seconds or (4.0 if q else 30.0), "asr": args.asr},
        "edge": {"slow_http": 500 if q else 5000, "slow_ws": 100 if q else 1000,
                 "probes": 8 if q else 20, "turns": 2 if q else 5},
        "control": {"requests": 300 if q else 2000},
        "fleet": {"rounds": 1 if q else 3, "schedules": 240 if q else 1000, "seconds": 5.0 if q else 15.0},
        "voice": {"lengths": not q},
        "remote_asr": {"turns": args.turns or (1 if q else 3), "asr": args.asr},
        "wake": {"wakes": 5 if q else 30},
        "safety": {},
        "asr_zh": {"quick": q},
        "local_llm": {"children": 2 if q else 6},
    }


def _counts(text):
    """--sessions 1,10,50 -> (1, 10, 50)"""
    try:
        counts = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of session counts, not %r" % text)
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("session counts must be 1 or more, not %r" % text)
    return counts


def run_section(name, size):
    if name == "latency":
        from .latency import run_latency
        return asyncio.run(run_latency(**size))
    if name == "local":
        from .local import run_local
        return asyncio.run(run_local(**size))
    if name == "cloud":
        from .latency import run_cloud
        return asyncio.run(run_cloud(**size))
    if name == "turns":
        from .turns import run_turns
        return run_turns(**size)
    if name == "concurrency":
        from .concurrency import run_concurrency
        return asyncio.run(run_concurrency(**size))
    if name == "compare":
        from .concurrency import run_compare
        return asyncio.run(run_compare(**size))
    if name == "workers":
        from .workers import run_workers
        return asyncio.run(run_workers(**size))
    if name == "fleet":
        from .fleet import run_fleet
        return run_fleet(**size)
    if name == "wake":
        from .wake import run_wake
        return run_wake(**size)
    if name == "safety":
        from .safety import run_safety
        return run_safety(**size)
    if name == "edge":
        from .edge import run_edge
        return asyncio.run(run_edge(**size))
    if name == "control":
        from .control_flood import run_control
        return asyncio.run(run_control(**size))
    if name == "voice":
        from .voice import run_voice
        return asyncio.run(run_voice(**size))
    if name == "remote_asr":
        from .remote_asr import run_remote_asr
        return asyncio.run(run_remote_asr(**size))
    if name == "local_llm":
        from .local_llm import run_local_llm
        return asyncio.run(run_local_llm(**size))
    if name == "asr_zh":
        from .asr_zh import run_asr_zh
        return asyncio.run(run_asr_zh(**size))
    raise ValueError(name)


def run_cmodule():
    """The C audio core's figures come from its own script, printed as it prints them."""
    print("\n== 6. C audio core (host build) ==", flush=True)
    done = subprocess.run([sys.executable, "bench/cmodule_bench.py"], timeout=CMODULE_TIMEOUT_S)
    return done.returncode == 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    # No `choices=`: argparse would reject the empty default of nargs="*".
    ap.add_argument("sections", nargs="*", metavar="section",
                    help="one or more of: %s (default: all)" % ", ".join(SECTIONS))
    ap.add_argument("--quick", action="store_true", help="small sizes, the whole run in about 30 s")
    ap.add_argument("--sessions", type=_counts, default=(),
                    help="concurrent sessions, one run per count (default 1,10,50,100,200; compare 1,10,50; quick 10)")
    ap.add_argument("--url", help="compare: the xiaozhi WebSocket URL to drive")
    ap.add_argument("--pid", type=int, help="compare: the server's process id, for its RSS")
    ap.add_argument("--token", help="compare: sent as Authorization: Bearer TOKEN")
    ap.add_argument("--seconds", type=float, default=0.0, help="length of the concurrency run")
    ap.add_argument("--turns", type=int, default=0,
                    help="latency: turns for the overhead figure (default 60); remote_asr: turns per row (default 3)")
    ap.add_argument("--asr", choices=("scripted", "funasr", "whisper"), default="scripted",
                    help="concurrency, workers: ASR answering 0.1 s after the turn (scripted), or a FunASR runtime "
                    "fake in its own process, streamed to, final 80 ms after the end of speech (funasr); "
                    "remote_asr: funasr runs its streaming rows only; concurrency: whisper, the default local "
                    "recogniser in-process (the local talkers' figure)")
    args = ap.parse_args(argv)
    unknown = [s for s in args.sections if s not in SECTIONS + ON_REQUEST]
    if unknown:
        ap.error("unknown section(s) %s; choose from %s" % (", ".join(unknown), ", ".join(SECTIONS + ON_REQUEST)))
    if "compare" in args.sections and not (args.url or "").startswith(("ws://", "wss://")):
        ap.error("compare needs --url ws://host:port/path/ of the server to drive")
    chosen = args.sections or list(SECTIONS)
    if args.quick and not args.sections:
        chosen = [s for s in SECTIONS if s != "cmodule"]   # it has no small size
    plan = sizes(args)
    failed = []
    t0 = time.monotonic()
    for name in chosen:
        started = time.monotonic()
        try:
            if name == "cmodule":
                if not run_cmodule():
                    failed.append(name)
                continue
            figures = run_section(name, plan[name])
            print(report.table(TITLES[name], figures))
            print("   (%.1f s)" % (time.monotonic() - started), flush=True)
        except Exception:
            failed.append(name)
            print("\n== %s: could not run ==" % TITLES.get(name, name))
            traceback.print_exc(file=sys.stdout)
    print("\nbench done in %.0f s%s" % (time.monotonic() - t0,
                                        "; sections that could not run: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
