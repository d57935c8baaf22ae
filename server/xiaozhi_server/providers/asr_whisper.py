"""faster-whisper ASR, by default on the Whisper base model from the PyPI wheels.

Config keys: `model_dir` (a CTranslate2 Whisper dir; default the joined
base model, see whisper_model), `compute_type` (default int8), `threads`
(CPU threads, default all cores), `beam_size` (default 1: greedy decoding
keeps latency low), `language` (default None = detect; pass it when known,
detection on short utterances is unreliable). The model loads once per
process, lazily, and is shared by every session.
"""
import os
import threading

from .registry import register
from .workers import run_blocking

_models: dict = {}
_models_lock = threading.Lock()


def load_model(model_dir, compute_type, threads):
    """The shared WhisperModel for these settings (blocking; call in the pool)."""
    key = (model_dir, compute_type, threads)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            from faster_whisper import WhisperModel
            model = WhisperModel(model_dir, device="cpu", compute_type=compute_type, cpu_threads=threads)
            _models[key] = model
        return model


@register("asr", "whisper")
class WhisperAsr:
    def __init__(self, config):
        self.config = config
        self.compute_type = config.get("compute_type", "int8")
        self.threads = int(config.get("threads", 0)) or (os.cpu_count() or 2)
        self.beam_size = int(config.get("beam_size", 1))
        self.language = config.get("language")
        self._model_dir = config.get("model_dir")

    def model_dir(self):
        if not self._model_dir:
            from .whisper_model import whisper_base_dir
            self._model_dir = whisper_base_dir()
        return self._model_dir

    def _transcribe(self, pcm16k, language):
        import numpy as np
        model = load_model(self.model_dir(), self.compute_type, self.threads)
        audio = np.frombuffer(pcm16k, dtype="<i2").astype(np.float32) / 32768.0
        seconds = len(audio) / 16000.0
        segments, _info = model.transcribe(
            audio, language=language, beam_size=self.beam_size,
            # One greedy pass without temperature retries, and a token budget
            # proportional to the audio, so a hallucination loop stays short.
            temperature=0.0, condition_on_previous_text=False, without_timestamps=True,
            max_new_tokens=int(seconds * 12) + 16, vad_filter=False)
        return "".join(s.text for s in segments).strip()

    async def transcribe(self, pcm16k, language=None):
        """Text of 16 kHz mono int16 PCM; `language` like "en" or "zh" when known."""
        if len(pcm16k) < 3200:  # under 0.1 s: nothing a person said
            return ""
        return await run_blocking(self._transcribe, pcm16k, language or self.language)

    async def warm_up(self):
        """Load the model now rather than on the first utterance."""
        await run_blocking(load_model, self.model_dir(), self.compute_type, self.threads)
