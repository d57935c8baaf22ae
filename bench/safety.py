"""`make bench ARGS=safety`: the chat app's safety filter on its own
adversarial corpus (bench/safety_corpus.json): per category, how much of
what a parent expects stopped is stopped, and how much harmless talk that
looks like a topic is blocked; what the filter costs a process.

The filter is the session's (pipeline/safety.py), given the corpus's topics
as a parent's list; a child's phrase goes through its word stage, a model's
reply through its sentence stage one sentence at a time, as chain.py
streams it. `paraphrase` (a topic said in other words) is the known limit:
printed, and counted in neither target.
"""
import asyncio
import collections
import json
import os
import subprocess
import sys
import time

from xiaozhi_server.pipeline.safety import Instead, SafetyFilter
from xiaozhi_server.text.lines import Lines

from .report import Figure

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safety_corpus.json")
LIMITS = ("paraphrase",)


class Topics:
    """The family store as the filter reads it: the corpus's topics."""

    def __init__(self, topics):
        self.value = {"blocked_topics": topics, "redirect_line": None}

    async def topics(self, device_id):
        return self.value

    async def add_flag(self, *a):
        pass


async def _blocked(f, phrase):
    if phrase["side"] == "child":
        return isinstance(await f.words(phrase["text"]), Instead)
    if hasattr(f, "new_reply"):      # (the filter before issue 37 had no window: bench it as it was)
        f.new_reply()
    for s in phrase["sentences"]:
        if isinstance(await f.sentence(s), Instead):
            return True
    return False


async def _run(corpus):
    f = SafetyFilter("bench", Topics(corpus["topics"]), Lines.load(), lambda: True)
    by = collections.defaultdict(lambda: [0, 0])
    missed = []
    took = []
    for p in corpus["phrases"]:
        t = time.perf_counter()
        got = await _blocked(f, p)
        took.append(time.perf_counter() - t)
        key = ("harmless" if not p["block"] else p["category"], p["side"])
        by[key][0] += 1
        by[key][1] += got
        if got != p["block"]:
            missed.append(p)
    return by, missed, took


_RSS = """
import sys, time
def rss():
    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])
sys.path.insert(0, %r)
import xiaozhi_server.pipeline.safety as s
before = rss(); t = time.perf_counter()
s.lexicon(); import asyncio
f = s.SafetyFilter('x', None, None, lambda: True)
asyncio.run(f.find('给我讲个鬼故事 tell me a ghost story'))
print(rss() - before, time.perf_counter() - t)
"""


def _process_cost():
    """(KB of RSS the filter adds to a process that imported it, seconds to build): a fresh interpreter."""
    server = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "server")
    out = subprocess.run([sys.executable, "-c", _RSS % server], capture_output=True, text=True, check=True)
    kb, s = out.stdout.split()
    return int(kb), float(s)


def run_safety(verbose=False):
    with open(CORPUS, encoding="utf-8") as fh:
        corpus = json.load(fh)
    by, missed, took = asyncio.run(_run(corpus))
    figures = []
    should = [v for (cat, _), v in by.items() if cat != "harmless" and cat not in LIMITS]
    caught = 100.0 * sum(v[1] for v in should) / sum(v[0] for v in should)
    harmless = [v for (cat, _), v in by.items() if cat == "harmless"]
    wrong = 100.0 * sum(v[1] for v in harmless) / sum(v[0] for v in harmless)
    n = len(corpus["phrases"])
    figures.append(Figure("should block: caught (%d phrases)" % sum(v[0] for v in should), caught, "%", 95.0,
                          "higher", "%d zh + en phrases in all" % n))
    figures.append(Figure("harmless look-alikes blocked (%d)" % sum(v[0] for v in harmless), wrong, "%", 2.0, "le"))
    for (cat, side), (total, hit) in sorted(by.items()):
        rate = 100.0 * hit / total
        name = "  %s, %s (%d)" % (cat, side, total)
        note = "blocked" if cat == "harmless" else ("caught (known limit)" if cat in LIMITS else "caught")
        figures.append(Figure(name, rate, "%", note=note))
    took.sort()
    figures.append(Figure("check per phrase, median", 1000 * took[len(took) // 2], "ms"))
    kb, build_s = _process_cost()
    figures.append(Figure("RSS the filter adds to a process", kb / 1024.0, "MB",
                          note="lexicon, fold tables, stemmer, pinyin, built in %.2f s" % build_s))
    for p in missed:
        if p["category"] not in LIMITS:
            print("   %s %s: %s" % ("missed" if p["block"] else "blocked", p["category"],
                                    p.get("text") or " | ".join(p["sentences"])))
    return figures
