"""GPT-SoVITS api_v2 adapter (POST /tts; 200 = WAV bytes, 400 = JSON error).

Config keys: `url` (default http://127.0.0.1:9880), `ref_audio_path`
(reference voice file on the GPT-SoVITS machine; a `voice` argument
overrides it), `prompt_text`, `prompt_lang` (default zh), `text_lang`
(default: guessed from the text's script), `text_split_method` (default
cut5), `speed_factor`, `extra` (dict merged into the request body),
`timeout` (seconds, default 30), `max_chars`.
"""
import json

from ..audio import wav_to_chunk
from ...text.lang import language_of
from ..registry import register
from .base import TtsError, TtsProvider


@register("tts", "gpt_sovits")
class GptSovitsTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("url", "timeout")
    max_chars = 300

    def __init__(self, config):
        super().__init__(config)
        self.url = config.get("url", "http://127.0.0.1:9880").rstrip("/") + "/tts"
        self.timeout = float(config.get("timeout", 30))

    def request_body(self, text, voice=None):
        c = self.config
        body = {
            "text": text,
            "text_lang": c.get("text_lang") or language_of(text),
            "ref_audio_path": voice or c.get("ref_audio_path", ""),
            "prompt_text": c.get("prompt_text", ""),
            "prompt_lang": c.get("prompt_lang", "zh"),
            "text_split_method": c.get("text_split_method", "cut5"),
            "batch_size": 1,
            "media_type": "wav",
            "streaming_mode": False,
        }
        if "speed_factor" in c:
            body["speed_factor"] = float(c["speed_factor"])
        body.update(c.get("extra") or {})
        return body

    async def synthesize(self, text, voice=None):
        import aiohttp
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as http:
                async with http.post(self.url, json=self.request_body(text, voice)) as resp:
                    data = await resp.read()
                    status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TtsError("GPT-SoVITS at %s unreachable: %s" % (self.url, exc or type(exc).__name__))
        if status != 200:
            raise TtsError("GPT-SoVITS refused (HTTP %d): %s" % (status, _error_message(data)))
        try:
            return wav_to_chunk(data)
        except Exception as exc:
            raise TtsError("GPT-SoVITS sent audio that is not 16-bit WAV: %s" % exc)


def _error_message(data):
    try:
        err = json.loads(data)
    except ValueError:
        return data[:200].decode("utf-8", "replace")
    if isinstance(err, dict):
        return str(err.get("message") or err.get("detail") or err)
    return str(err)
