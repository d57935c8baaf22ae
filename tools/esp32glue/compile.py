"""Compiling one file with the build's own command, as far as assembly
text, and preprocessing with it (tools/check_esp32_glue.py)."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fail(msg):
    print("check_esp32_glue: " + msg, file=sys.stderr)


def _flags(command):
    """The compile command without its output and input: only the flags."""
    args = shlex.split(command)
    out, skip = [], False
    for x in args[1:]:
        if skip:
            skip = False
        elif x == "-o":
            skip = True
        elif x != "-c" and not x.endswith(".c"):
            out.append(x)
    return args[0], out


def preprocessor(entry):
    directory, command = entry
    cc, flags = _flags(command)

    def run(extra, source, stdin_text):
        cmd = [cc] + flags + extra + ["-E", str(source) if source else "-"]
        r = subprocess.run(cmd, cwd=directory, input=stdin_text, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("preprocessing failed:\n" + r.stderr[-4000:])
        return r.stdout
    return run


def compile_check(src, directory, command):
    """ESP-IDF's own command for SRC, taken as far as assembly text (-S):
    the optimiser runs at the build's level, so its flow warnings
    (uninitialised use, out-of-bounds, overflowing copies) are reported;
    the output is host assembly and is thrown away, never assembled."""
    cc, flags = _flags(command)
    r = subprocess.run([cc] + flags + ["-fdiagnostics-color=never", "-S", "-o", os.devnull, str(src)],
                       cwd=directory, capture_output=True, text=True)
    rel = os.path.relpath(src, ROOT) if Path(src).is_relative_to(ROOT) else str(src)
    diags = [l for l in r.stderr.splitlines() if re.search(r": (error|warning): ", l)]
    print("%-45s %s" % (rel, "ok" if r.returncode == 0 and not diags else "FAILED"))
    if r.returncode or diags:
        print(r.stderr.rstrip())
        return 1
    return 0


def compile_all(files, cmds):
    missing = [str(f) for f in files if f not in cmds]
    if missing:
        fail("no compile command for: %s" % ", ".join(missing))
        return len(missing)
    bad = sum(compile_check(f, *cmds[f]) for f in files)
    print("%d files compiled (to host assembly, not assembled), %d with errors or warnings"
          % (len(files), bad))
    return bad
