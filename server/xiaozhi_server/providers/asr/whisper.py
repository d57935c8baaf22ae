"""faster-whisper ASR, by default on the Whisper base model from the PyPI wheels.

Config keys: `model_dir` (a CTranslate2 Whisper dir; default the joined
base model, see whisper_model), `compute_type` (default int8), `threads`
(CPU threads, default all cores), `beam_size` (default 1: greedy decoding
keeps latency low), `language` (default None = detect; pass it when known,
detection on short utterances is unreliable), `short_pad_frames`,
`languages` (when the language is not given, detection chooses among
these, e.g. ["zh", "en"]; default any), `initial_prompt` (text Whisper reads as what was said before: the
device's command words and names steer it to them; Chinese in it steers
it to Simplified characters and punctuation; default none). The
model loads once per process and is shared by every session; `warm_up()`
loads it at start and decodes a second of silence.

An utterance of up to 30 s is one Whisper window with a little padding
after it (`short_pad_frames`, default 5 s), not faster-whisper's padding
to the full 30 s: the encoder's cost grows with its frames. Text that
looks like a loop (`looped`) is decoded again with 10 s of padding; why
5 s is docs/providers.md. Longer audio goes through faster-whisper's own
window-by-window transcribe. One utterance is decoded at a time; callers
wait on the event loop (pools.LoopSerial), not in pool threads.
"""
import os
import threading

from ..registry import register
from ...pools import LoopSerial
from ...pools import run_blocking

SAMPLE_RATE = 16000
WINDOW_S = 30        # what Whisper's encoder sees at most
PAD_S = 10           # silence given after an utterance (see above)
HOP = 160            # samples per feature frame
PAD_FRAMES = PAD_S * SAMPLE_RATE // HOP
SHORT_PAD_FRAMES = 500   # tried first (see above)
LOOP_RUN = 3             # tokens: a text ending in a repeat this long looped

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


def features(model, audio, pad):
    """The utterance's log-mel frames (at most one window) with `pad` zero frames after
    them, as faster-whisper pads a window, only shorter: an utterance of 20 s or more
    gets exactly the window it got before."""
    import numpy as np
    mel = model.feature_extractor(audio)
    window = model.feature_extractor.nb_max_frames
    pad = max(0, min(pad, window - mel.shape[-1]))
    return np.ascontiguousarray(np.pad(mel[:, :window], ((0, 0), (0, pad)))[np.newaxis])


def looped(ids, budget):
    """True when a decode looks like Whisper repeating itself: it used its whole
    token budget, or its text ends in a repeat, its last LOOP_RUN or more
    tokens (and a third of the text at least) going over what came before
    them again ("Hello there. Hello there.", or a second round cut off
    before its end). A repeat inside the text is a child's ("no, no, I said
    no"); a false alarm only costs one more decode with the long padding."""
    n = len(ids)
    if n >= budget:
        return True
    for period in range(1, n - LOOP_RUN + 1):
        same = 0
        while same < n - period and ids[n - 1 - same] == ids[n - 1 - same - period]:
            same += 1
        # A third of the text at least: a long utterance may well end on words said before.
        if same >= LOOP_RUN and same >= min(period, 2 * LOOP_RUN) and 3 * same >= n:
            return True
    return False


def encode(model, frames):
    import ctranslate2
    return model.model.encode(ctranslate2.StorageView.from_array(frames))


def detect_language(model, encoded, among=()):
    """The language most likely spoken; with `among`, the likeliest of those
    (a short Mandarin question is otherwise often heard as Vietnamese,
    Japanese or Thai, and written in their script)."""
    if not model.model.is_multilingual:
        return "en"
    ranked = [token[2:-2] for token, _p in model.model.detect_language(encoded)[0]]   # "<|zh|>" -> "zh"
    return next((lang for lang in ranked if lang in among), ranked[0]) if among else ranked[0]


PROMPT_TOKENS = 223     # Whisper's previous-text context is at most half its 448 positions


def prompt_ids(model, text):
    """Whisper's previous-text tokens for an initial prompt (no language needed)."""
    if not text:
        return []
    tok, _ = _tokenizer(model, "en")   # the text's tokens do not depend on the language
    return tok.encode(" " + text.strip())[-PROMPT_TOKENS:]


def generate(model, encoded, language, beam_size, budget, before=()):
    """Token ids of the text, at most `budget` of them; `before` = prompt_ids()."""
    tok, suppress = _tokenizer(model, language)
    prompt = ([tok.sot_prev] + list(before) if before else []) + list(tok.sot_sequence) + [tok.no_timestamps]
    result = model.model.generate(
        encoded, [prompt], beam_size=beam_size, suppress_blank=True, suppress_tokens=suppress,
        max_length=len(prompt) + budget)[0]
    return result.sequences_ids[0]


def _decode(model, frames, language, beam_size, budget, before=(), among=()):
    """(token ids, language) of one padded window."""
    encoded = encode(model, frames)
    language = language or detect_language(model, encoded, among)
    return generate(model, encoded, language, beam_size, budget, before), language


def decode_window(model, audio, language, beam_size, short_pad=SHORT_PAD_FRAMES, before=(), among=()):
    """Text of float32 16 kHz audio of at most 30 s, decoded as one padded window:
    first with `short_pad` frames of padding, again with PAD_S if that one looped."""
    budget = token_budget(len(audio) / SAMPLE_RATE)
    ids, lang = None, language
    frames = len(audio) // HOP
    # Near a full window the long padding adds (almost) nothing: no second decode then.
    if short_pad and frames + short_pad < min(frames + PAD_FRAMES, WINDOW_S * SAMPLE_RATE // HOP):
        ids, lang = _decode(model, features(model, audio, short_pad), language, beam_size, budget, before, among)
        if looped(ids, budget):
            ids = None
    if ids is None:
        ids, lang = _decode(model, features(model, audio, PAD_FRAMES), language, beam_size, budget, before, among)
    return _tokenizer(model, lang)[0].decode(ids).strip()


@register("asr", "whisper")
class WhisperAsr:
    takes_prompt = True     # transcribe(prompt=...): a session's words, after initial_prompt
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("compute_type", "threads", "beam_size", "language", "languages", "model_dir", "short_pad_frames",
               "initial_prompt")

    def __init__(self, config):
        self.config = config
        self.compute_type = config.get("compute_type", "int8")
        self.threads = int(config.get("threads", 0)) or (os.cpu_count() or 2)
        self.beam_size = int(config.get("beam_size", 1))
        self.language = config.get("language")
        self._model_dir = config.get("model_dir")
        self.short_pad = int(config.get("short_pad_frames", SHORT_PAD_FRAMES))
        self.initial_prompt = str(config.get("initial_prompt") or "")
        self.languages = tuple(config.get("languages") or ())
        if self.short_pad < 0:
            raise ValueError("asr short_pad_frames must be 0 (always pad 10 s) or more, not %d" % self.short_pad)

    def model_dir(self):
        if not self._model_dir:
            from .whisper_model import whisper_base_dir
            self._model_dir = whisper_base_dir()
        return self._model_dir

    def _model(self):
        """Blocking: the first call may join the model's parts on disk, then loads it."""
        return load_model(self.model_dir(), self.compute_type, self.threads)

    def _transcribe(self, pcm16k, language, prompt=""):
        import numpy as np
        model = self._model()
        prompt = " ".join(p for p in (self.initial_prompt, prompt) if p)
        audio = np.frombuffer(pcm16k, dtype="<i2").astype(np.float32) / 32768.0
        if len(audio) <= WINDOW_S * SAMPLE_RATE:
            return decode_window(model, audio, language, self.beam_size, self.short_pad,
                                 prompt_ids(model, prompt), self.languages)
        segments, _info = model.transcribe(
            audio, language=language, beam_size=self.beam_size, initial_prompt=prompt or None,
            # One greedy pass without temperature retries, and a token budget
            # proportional to the audio, so a hallucination loop stays short.
            temperature=0.0, condition_on_previous_text=False, without_timestamps=True,
            max_new_tokens=token_budget(WINDOW_S), vad_filter=False)
        return "".join(s.text for s in segments).strip()

    async def transcribe(self, pcm16k, language=None, prompt=""):
        """Text of 16 kHz mono int16 PCM; `language` like "en" or "zh" when
        known; `prompt`: words this child is likely to say (their name)."""
        if len(pcm16k) < 3200:  # under 0.1 s: nothing a person said
            return ""
        async with _serial.lock():
            return await run_blocking(self._transcribe, pcm16k, language or self.language, prompt)

    async def warm_up(self):
        """Load the model and decode one second of silence now: the first decode after
        a load also sets up the engine's buffers and kernels (measured 0.1-1.3 s more
        than the next one), which the first child to speak would otherwise wait for."""
        await run_blocking(self._transcribe, bytes(2 * SAMPLE_RATE), self.language)
