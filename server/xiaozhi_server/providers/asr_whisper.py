"""faster-whisper ASR, by default on the Whisper base model from the PyPI wheels.

Config keys: `model_dir` (a CTranslate2 Whisper dir; default the joined
base model, see whisper_model), `compute_type` (default int8), `threads`
(CPU threads, default all cores), `beam_size` (default 1: greedy decoding
keeps latency low), `language` (default None = detect; pass it when known,
detection on short utterances is unreliable). The model loads once per
process and is shared by every session; `warm_up()` loads it at start.

An utterance of up to 30 s is one Whisper window: it goes straight to
CTranslate2 with 10 s (1000 frames) of padding after it, instead of
faster-whisper's padding to the full 30 s. The encoder's cost grows with the frames it is
given, so a 2 s question costs a fraction of a full window and reads the
same (bench `voice` measures both). Much less silence than ~5 s makes
Whisper repeat a short utterance until its token budget runs out. Longer
audio goes through faster-whisper's own window-by-window transcribe.

The model decodes one utterance at a time (one CTranslate2 worker, all
cores): sessions that finish speaking together queue on the event loop
(serial.LoopSerial), not in pool threads that other sessions' TTS needs.
"""
import os
import threading

from .registry import register
from .serial import LoopSerial
from .workers import run_blocking

SAMPLE_RATE = 16000
WINDOW_S = 30        # what Whisper's encoder sees at most
PAD_S = 10           # silence given after an utterance (see above)
HOP = 160            # samples per feature frame

_models: dict = {}
_models_lock = threading.Lock()
_serial = LoopSerial()   # the model decodes one utterance at a time (see serial)
_tokenizers: dict = {}


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


def _tokenizer(model, language):
    """(tokenizer, tokens to suppress) for one language, built once per model."""
    key = (id(model), language)
    with _models_lock:
        found = _tokenizers.get(key)
        if found is None:
            from faster_whisper.tokenizer import Tokenizer
            from faster_whisper.transcribe import get_suppressed_tokens
            tok = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language)
            found = _tokenizers[key] = (tok, list(get_suppressed_tokens(tok, [-1])))
        return found


def token_budget(seconds):
    """New tokens allowed for `seconds` of audio: a hallucination loop stays short."""
    return int(seconds * 12) + 16


def decode_window(model, audio, language, beam_size):
    """Text of float32 16 kHz audio of at most 30 s, decoded as one padded window."""
    import ctranslate2
    import numpy as np
    features = model.feature_extractor(audio)
    frames = features.shape[-1]
    window = model.feature_extractor.nb_max_frames
    # Padded as faster-whisper pads a window (zeros after the features), only shorter:
    # an utterance of 20 s or more gets exactly the window it got before.
    pad = max(0, min(PAD_S * SAMPLE_RATE // HOP, window - frames))
    features = np.pad(features[:, :window], ((0, 0), (0, pad)))
    encoded = model.model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(features[np.newaxis])))
    if language is None:
        if model.model.is_multilingual:
            language = model.model.detect_language(encoded)[0][0][0][2:-2]   # "<|zh|>" -> "zh"
        else:
            language = "en"
    tok, suppress = _tokenizer(model, language)
    prompt = list(tok.sot_sequence) + [tok.no_timestamps]
    result = model.model.generate(
        encoded, [prompt], beam_size=beam_size, suppress_blank=True, suppress_tokens=suppress,
        max_length=len(prompt) + token_budget(len(audio) / SAMPLE_RATE))[0]
    return tok.decode(result.sequences_ids[0]).strip()


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

    def _model(self):
        """Blocking: the first call may join the model's parts on disk, then loads it."""
        return load_model(self.model_dir(), self.compute_type, self.threads)

    def _transcribe(self, pcm16k, language):
        import numpy as np
        model = self._model()
        audio = np.frombuffer(pcm16k, dtype="<i2").astype(np.float32) / 32768.0
        if len(audio) <= WINDOW_S * SAMPLE_RATE:
            return decode_window(model, audio, language, self.beam_size)
        segments, _info = model.transcribe(
            audio, language=language, beam_size=self.beam_size,
            # One greedy pass without temperature retries, and a token budget
            # proportional to the audio, so a hallucination loop stays short.
            temperature=0.0, condition_on_previous_text=False, without_timestamps=True,
            max_new_tokens=token_budget(WINDOW_S), vad_filter=False)
        return "".join(s.text for s in segments).strip()

    async def transcribe(self, pcm16k, language=None):
        """Text of 16 kHz mono int16 PCM; `language` like "en" or "zh" when known."""
        if len(pcm16k) < 3200:  # under 0.1 s: nothing a person said
            return ""
        async with _serial.lock():
            return await run_blocking(self._transcribe, pcm16k, language or self.language)

    async def warm_up(self):
        """Load the model now rather than on the first utterance."""
        await run_blocking(self._model)
