"""One llama.cpp server per node for the local model, on loopback.

A 1.5B model takes 1.9 GB and seconds to load: every process that serves
sessions (the single server, or each worker) talks to one host process
instead of loading its own copy. The first process to need it starts it,
under a file lock beside the model, and the others find it through the
state file the host writes once it listens:

    <model cache>/<model>.host.json   {"url", "pid", "slots", "threads"}

The host is llama.cpp's own server (xllamacpp embeds it): continuous
batching over `slots` sequences at once, each slot keeping the KV cache of
the prompt it last read, so the fixed system prompt is read once and
reused by every turn and session that starts with it. Requests beyond the
slots wait in its queue. The host exits when the process that started it
is gone; the next one to need it starts another (local.py does on a
refused connection).
"""
from __future__ import annotations

import fcntl
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.request

HOST_MODULE = "xiaozhi_server.providers.llm.llama_host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def state_path(model: pathlib.Path) -> pathlib.Path:
    return model.with_name(model.name + ".host.json")


def read_state(model: pathlib.Path) -> dict | None:
    """The running host's state, or None when none answers."""
    try:
        state = json.loads(state_path(model).read_text())
    except (OSError, ValueError):
        return None
    if _alive(int(state.get("pid", 0))) and _healthy(state["url"]):
        return state
    return None


def ensure_host(model: pathlib.Path, slots: int, threads: int, context: int,
                warm_prompts: list[list[dict]] | None = None, start_timeout_s: float = 600) -> dict:
    """The host's state ({"url", "slots", ...}), starting it if no process on
    this node has. Blocking (file lock, model load): call it from a thread."""
    lock_path = model.with_name(model.name + ".host.lock")
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # released when the file closes
        state = read_state(model)
        if state is not None:
            return state
        log_path = model.with_name(model.name + ".host.log")
        state_path(model).unlink(missing_ok=True)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", HOST_MODULE, str(model), str(slots), str(threads), str(context),
                 str(os.getpid()), json.dumps(list(warm_prompts or []))],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + start_timeout_s
        # Polled: the state file is the host's only signal, and a load takes seconds.
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log_path.read_bytes()[-800:].decode(errors="replace")
                raise RuntimeError("the local model host exited (%s) while loading %s; its log ends: %s"
                                   % (proc.returncode, model.name, tail))
            state = read_state(model)
            if state is not None and state["pid"] == proc.pid:
                return state
            time.sleep(0.2)
        proc.kill()
        raise RuntimeError("the local model host did not start within %.0f s" % start_timeout_s)


# ---- the host process ----

def serve(model: str, slots: int, threads: int, context: int, owner: int, warm_prompts: list) -> None:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model
    # One slot more than the conversations' for the translator (mcp_servers/translate/llm.py):
    # its requests would otherwise push a child's conversation out of a slot.
    params.n_parallel = slots + 1
    # The context is shared by the slots; each gets `context` tokens.
    params.n_ctx = context * (slots + 1)
    # Reading the prompt takes every core; writing leaves one to the voices:
    # the first sentence is spoken while the model writes the next, and
    # llama.cpp's threads spin, so a thread per core starves the TTS (and is
    # starved itself: on a loaded 2-core machine a token took 2.6 s).
    params.cpuparams_batch.n_threads = threads
    params.cpuparams.n_threads = max(1, threads - 1)
    params.hostnames = ["127.0.0.1"]
    params.port = 0                 # any free port: the state file tells it
    params.endpoint_slots = True    # local.py reads how many slots are busy
    params.cache_prompt = True
    params.use_jinja = True         # the model's own chat template, from the GGUF
    server = xlc.Server(params)
    url = server.listening_address.rstrip("/")
    # Each slot reads the fixed system prompt now, so no child's first question waits for it.
    for messages in warm_prompts:
        for slot in range(slots):
            req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(
                {"messages": messages, "max_tokens": 1, "id_slot": slot, "cache_prompt": True}).encode(),
                headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=600).read()
            except OSError as e:
                print("warming slot %d failed: %s" % (slot, e), file=sys.stderr)
    path = state_path(pathlib.Path(model))
    tmp = path.with_name(path.name + ".tmp%d" % os.getpid())
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid(), "slots": slots, "translation_slot": slots,
                               "threads": threads, "model": pathlib.Path(model).name}))
    os.replace(tmp, path)
    print("local model host: %s at %s, %d slots, %d threads" % (model, url, slots, threads), file=sys.stderr,
          flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    # The server runs in its own threads; this one watches the process that started it.
    while not stop and _alive(owner) and os.getppid() == owner:
        time.sleep(1)
    path.unlink(missing_ok=True)


if __name__ == "__main__":
    m, s, t, c, o, w = sys.argv[1:7]
    serve(m, int(s), int(t), int(c), int(o), json.loads(w))
