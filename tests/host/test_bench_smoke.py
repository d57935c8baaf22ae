"""`make bench` must keep running: its quickest sections, tiny sizes, real server.

Only that figures come out is checked (a number beside each name and the
target column); their values are for people and are never asserted.
"""
import re
import subprocess
import sys

import testkit


def test_quick_bench_sections_print_their_figures():
    out = subprocess.run([sys.executable, "-m", "bench", "--quick", "--turns", "3", "latency", "turns"],
                         cwd=testkit.ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    text = out.stdout
    assert "could not run" not in text, text
    overhead = re.search(r"^pipeline overhead p95\s+([\d.]+) ms\s+< 15\.0 ms", text, re.M)
    assert overhead, text
    assert re.search(r"^\S.*\b3 turns; end-of-turn decision", text, re.M), text
    cutoffs = re.search(r"^false cut-offs, words choose \(\d+/\d+/\d+ ms\)\s+([\d.]+) %\s+< 5\.0 %", text, re.M)
    assert cutoffs and 0.0 <= float(cutoffs.group(1)) <= 100.0, text
    assert re.search(r"^end-of-turn delay p50, silence_ms=\d+ \(speculative end[^)]*\)\s+[\d.]+ ms", text, re.M), text
