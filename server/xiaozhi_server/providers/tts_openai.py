"""OpenAI-compatible TTS (`/v1/audio/speech`) over the `openai` client.

Config keys: `base_url`, `api_key` (else the client's OPENAI_BASE_URL and
OPENAI_API_KEY), `model` (default tts-1), `voice` (default alloy; a
`voice` argument overrides it), `response_format` (pcm, the default, is
streamed as it arrives and is 24 kHz 16-bit mono; wav is parsed whole),
`pcm_rate` (default 24000), `speed`, `timeout` (seconds, default 30),
`max_chars` (default 4096, the API's limit).
"""
from .audio import AudioChunk, wav_to_chunk
from .registry import register
from .tts_base import TtsError, TtsProvider

# Hand PCM on in pieces of 100 ms at 24 kHz so playback can start early.
_STREAM_PIECE = 4800


@register("tts", "openai")
class OpenAiTts(TtsProvider):
    max_chars = 4096

    def __init__(self, config):
        super().__init__(config)
        self.model = config.get("model", "tts-1")
        self.voice = config.get("voice", "alloy")
        self.format = config.get("response_format", "pcm")
        if self.format not in ("pcm", "wav"):
            raise ValueError("openai TTS response_format must be pcm or wav, not %r" % self.format)
        self.pcm_rate = int(config.get("pcm_rate", 24000))
        self._client = None

    def client(self):
        if self._client is None:
            from openai import AsyncOpenAI
            self._client = AsyncOpenAI(
                base_url=self.config.get("base_url"), api_key=self.config.get("api_key") or "none",
                timeout=float(self.config.get("timeout", 30)), max_retries=0)
        return self._client

    def _args(self, text, voice):
        args = {"model": self.model, "voice": voice or self.voice, "input": text,
                "response_format": self.format}
        if "speed" in self.config:
            args["speed"] = float(self.config["speed"])
        return args

    async def stream(self, text, voice=None):
        import openai
        try:
            async with self.client().audio.speech.with_streaming_response.create(**self._args(text, voice)) as resp:
                if self.format == "wav":
                    yield wav_to_chunk(await resp.read())
                    return
                pending = bytearray()
                async for data in resp.iter_bytes():
                    pending += data
                    if len(pending) >= _STREAM_PIECE:
                        cut = len(pending) & ~1  # keep whole 16-bit samples
                        yield AudioChunk(bytes(pending[:cut]), self.pcm_rate)
                        del pending[:cut]
                if len(pending) > 1:
                    yield AudioChunk(bytes(pending[:len(pending) & ~1]), self.pcm_rate)
        except openai.APIStatusError as exc:
            raise TtsError("OpenAI TTS refused (HTTP %d): %s" % (exc.status_code, exc.message))
        except openai.APIError as exc:
            raise TtsError("OpenAI TTS failed: %s" % exc)

    async def synthesize(self, text, voice=None):
        pcm = bytearray()
        rate = self.pcm_rate
        async for chunk in self.stream(text, voice):
            pcm += chunk.pcm
            rate = chunk.rate
        return AudioChunk(bytes(pcm), rate)
