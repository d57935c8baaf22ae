"""OpenAI-compatible TTS (`/v1/audio/speech`) over the `openai` client.

Config keys: `base_url`, `api_key` (else the client's OPENAI_BASE_URL and
OPENAI_API_KEY), `model` (default tts-1), `voice` (default alloy; a
`voice` argument overrides it), `response_format` (pcm, the default, and
wav are streamed as they arrive; mp3, opus, aac and flac are decoded whole
with PyAV), `pcm_rate` (the rate of a raw PCM answer, default 24000, as
OpenAI and Kokoro send; other servers differ), `speed`, `timeout`
(seconds, default 30), `max_chars` (default 4096, the API's limit).

What comes back is read by its first bytes, not by what was asked
(audio_decode.sniff): self-hosted servers answer WAV or MP3 to a pcm
request, stream WAV with no length, write float or stereo samples; a
bare MP3 or AAC frame (no ID3 tag) to a pcm request is told from samples
by its Content-Type. A
body that is no audio (an HTML error page with status 200) is a TtsError.
"""
from ..audio import AudioChunk
from ..audio_decode import AudioFormatError, WavStream, decode_compressed, sniff
from ..registry import register
from .base import TtsError, TtsProvider
from ...pools import run_blocking

FORMATS = ("pcm", "wav", "mp3", "opus", "aac", "flac")
_COMPRESSED_TYPES = ("mpeg", "mp3", "aac", "ogg", "opus", "flac")

@register("tts", "openai")
class OpenAiTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("base_url", "api_key", "model", "voice", "response_format", "pcm_rate", "timeout", "speed")
    max_chars = 4096

    def __init__(self, config):
        super().__init__(config)
        self.model = config.get("model", "tts-1")
        self.voice = config.get("voice", "alloy")
        self.format = config.get("response_format", "pcm")
        if self.format not in FORMATS:
            raise ValueError("openai TTS response_format must be one of %s, not %r"
                             % (", ".join(FORMATS), self.format))
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
                pieces = resp.iter_bytes()
                head = b""
                async for data in pieces:
                    head += data
                    if len(head) >= 16:
                        break
                # A bare MP3 or AAC frame sync looks like samples; when a pcm
                # request gets one, the Content-Type tells (servers that always
                # answer MP3, such as Edge-backed ones, send no ID3 tag).
                declared = resp.headers.get("content-type", "").lower()
                compressed = any(name in declared for name in _COMPRESSED_TYPES)
                kind = sniff(head, expect_pcm=self.format == "pcm" and not compressed)
                if kind == "pcm" or kind == "wav":
                    async for chunk in self._pcm_chunks(kind, head, pieces):
                        yield chunk
                else:
                    body = bytearray(head)
                    async for data in pieces:
                        body += data
                    yield await run_blocking(decode_compressed, bytes(body))
        except AudioFormatError as exc:
            raise TtsError("OpenAI TTS answer unreadable: %s" % exc)
        except openai.APIStatusError as exc:
            raise TtsError("OpenAI TTS refused (HTTP %d): %s" % (exc.status_code, exc.message))
        except openai.APIError as exc:
            raise TtsError("OpenAI TTS failed: %s" % exc)

    async def _pcm_chunks(self, kind, head, pieces):
        """Mono int16 chunks of a raw PCM or WAV body, ~100 ms each, as they arrive."""
        wav = WavStream() if kind == "wav" else None
        pending = bytearray()

        def take(data):
            if wav is None:
                pending.extend(data)
                return
            pending.extend(wav.feed(data))

        take(head)
        async for data in pieces:
            take(data)
            rate = wav.rate if wav is not None else self.pcm_rate
            if rate and len(pending) >= rate // 5:   # 100 ms of 16-bit samples
                cut = len(pending) & ~1   # whole samples only
                yield AudioChunk(bytes(pending[:cut]), rate)
                del pending[:cut]
        rate = wav.rate if wav is not None else self.pcm_rate
        if wav is not None and rate is None:
            raise AudioFormatError("the WAV answer ended inside its header")
        if len(pending) > 1:
            yield AudioChunk(bytes(pending[:len(pending) & ~1]), rate)

    async def synthesize(self, text, voice=None):
        pcm = bytearray()
        rate = self.pcm_rate
        async for chunk in self.stream(text, voice):
            pcm += chunk.pcm
            rate = chunk.rate
        return AudioChunk(bytes(pcm), rate)
