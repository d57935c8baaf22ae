"""`.ci/run` takes the MicroPython source from MICROPY_SRC, else from
../shared/vendor/ beside the checkout, and from nowhere else (it named one
machine's path before). Run on a copy of the script in a made-up checkout,
with a `make` on PATH that prints what it was given."""
import os
import shutil
import subprocess

from testkit import ROOT

TARBALL = "micropython-1.28.0-src.tar.xz"


def _ci_run(tmp_path, env_src=None, vendored=False, make='echo "MICROPY_SRC=${MICROPY_SRC:-} $*"', env_add=None):
    checkout = tmp_path / "work" / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    if vendored:
        (tmp_path / "work" / "shared" / "vendor").mkdir(parents=True)
        (tmp_path / "work" / "shared" / "vendor" / TARBALL).write_bytes(b"")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text('#!/bin/sh\n%s\n' % make)
    (bin_dir / "make").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MICROPY_SRC", "PYTEST_ADDOPTS")}
    env.update(env_add or {})
    env["PATH"] = "%s:%s" % (bin_dir, env["PATH"])
    if env_src is not None:
        env["MICROPY_SRC"] = env_src
    out = subprocess.run(["bash", str(checkout / ".ci" / "run")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_without_a_vendored_source_none_is_invented(tmp_path):
    assert _ci_run(tmp_path) == "MICROPY_SRC= test"


def test_the_source_vendored_beside_the_checkout_is_used(tmp_path):
    want = tmp_path / "work" / "shared" / "vendor" / TARBALL
    assert _ci_run(tmp_path, vendored=True) == "MICROPY_SRC=%s test" % os.path.realpath(want)


def test_the_callers_choice_wins(tmp_path):
    assert _ci_run(tmp_path, env_src="/src/micropython", vendored=True) == "MICROPY_SRC=/src/micropython test"


def test_the_log_ends_with_the_30_slowest_tests(tmp_path):
    shown = _ci_run(tmp_path, make='echo "$PYTEST_ADDOPTS"')
    assert shown == "--durations=30"
    # A caller's own pytest options are kept.
    assert _ci_run(tmp_path / "again", make='echo "$PYTEST_ADDOPTS"',
                   env_add={"PYTEST_ADDOPTS": "-x"}) == "-x --durations=30"
