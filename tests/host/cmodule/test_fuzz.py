"""Bounded-time fuzzing of the C core under AddressSanitizer and
UndefinedBehaviorSanitizer (harnesses built by `make cmodule-host`): the
packet decoder and MP3 parser take malformed input without a crash or a
sanitizer report, and the buffers match a reference model."""
import os
import subprocess

import pytest

from testkit import ROOT, xzcore
from test_mp3info import make  # real MP3s as seeds for the mutations

SECONDS = 3
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def run_harness(name, *args):
    exe = xzcore.LIB_PATH.parent / name
    env = dict(os.environ, **SAN_ENV)
    p = subprocess.run([str(exe), str(SECONDS), "20240611"] + [str(a) for a in args],
                       capture_output=True, text=True, env=env, timeout=SECONDS + 60, cwd=ROOT)
    out = p.stdout + p.stderr
    assert "Sanitizer" not in out and "runtime error" not in out, out[-6000:]
    assert p.returncode == 0, out[-6000:]
    line = [l for l in p.stdout.splitlines() if l.startswith(name)]
    assert line, out
    fields = dict(kv.split("=") for kv in line[0].split()[1:])
    return {k: int(v) for k, v in fields.items()}


def test_harnesses_are_sanitizer_builds(core):
    # A harness built without the sanitizers would prove nothing here.
    for name in ("fuzz_opus_dec", "fuzz_mp3info", "fuzz_ring"):
        data = (xzcore.LIB_PATH.parent / name).read_bytes()
        assert b"__asan_init" in data and b"__ubsan_handle" in data, name


def test_fuzz_opus_packet_decoder(core):
    stats = run_harness("fuzz_opus_dec")
    assert stats["iterations"] > 1000 and stats["decoded"] > 0


def test_fuzz_mp3_parser(core, tmp_path_factory, tools_for_mp3):
    tmp = tmp_path_factory.mktemp("fuzzseeds")
    seeds = [make(tmp, 16000, "vbr"), make(tmp, 44100, "sox"), make(tmp, 24000, "id3"),
             make(tmp, 22050, "notag")]
    stats = run_harness("fuzz_mp3info", *seeds)
    assert stats["iterations"] > 1000 and stats["parsed"] > 0


def test_fuzz_buffers_against_a_model(core):
    stats = run_harness("fuzz_ring")
    assert stats["iterations"] > 10
