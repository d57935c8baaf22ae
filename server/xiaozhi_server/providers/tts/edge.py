"""Microsoft Edge's read-aloud voices (the stock xiaozhi server's default
TTS) through the maintained `edge-tts` package.

Config keys: `voice` (zh-CN-XiaoxiaoNeural; any Edge voice name such as
en-US-AnaNeural, or the long "Microsoft Server Speech Text to Speech Voice
(zh-CN, XiaoxiaoNeural)" form), `rate` ("+0%", or a number of percent),
`pitch` ("+0Hz", or a number of Hz), `volume` ("+0%"), `proxy` (an HTTP
proxy URL), `connect_timeout` (5 s), `first_audio_timeout` (5 s from the
request to the first audio), `chunk_timeout` (5 s between two pieces of
audio), `max_chars` (1000).

The service streams MP3 (audio-24khz-48kbitrate-mono-mp3) in binary
WebSocket frames; each frame is decoded as it arrives (audio_decode.
Mp3Stream, in the thread pool) and handed on as 24 kHz PCM, so the first
words play before the sentence is rendered. Every failure of the service
(down, refused, slow, cut, a frame that is not its protocol, audio that
does not decode, no audio at all) is one TtsError, so a fallback chain
speaks instead. Messages never carry the request URL's query, which holds
the client token and the Sec-MS-GEC value the package computes.

The package has no endpoint option: it connects to the URL in
`edge_tts.communicate.WSS_URL`. Tests point that one constant at a local
server speaking the same protocol (testkit.fake_edge_tts); nothing else of
the package is replaced. A connection that drops after some audio ends
the package's stream without an error; the audio bytes its `state` has
not yet booked at a `turn.end` tell that case apart from a whole turn.
"""
import asyncio
import math
import re

from ..audio import AudioChunk
from ..audio_decode import AudioFormatError, Mp3Stream
from ..registry import ProviderUnavailable, register
from .base import TtsError, TtsProvider
from ...pools import run_blocking

DEFAULT_VOICE = "zh-CN-XiaoxiaoNeural"
_URL = re.compile(r"\b(wss?|https?)://([^\s'\"?]+)\?[^\s'\"]*")


def scrub(message):
    """An error message without the query strings of URLs (tokens live there)."""
    return _URL.sub(lambda m: "%s://%s" % (m.group(1), m.group(2)), str(message))


def _signed(value, unit):
    """"+10%" from 10, strings as given (the package checks their form)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "%+d%s" % (int(value), unit)
    return str(value)


def _describe(exc):
    """One line for a failure of the service, never its URL's query."""
    import aiohttp
    from edge_tts import exceptions
    name = type(exc).__name__
    if isinstance(exc, aiohttp.ClientResponseError):   # str() of these holds the URL: not used
        return "Edge TTS refused (HTTP %d): %s" % (exc.status, scrub(exc.message))
    if isinstance(exc, aiohttp.ClientConnectionError):
        return "Edge TTS unreachable: %s: %s" % (name, scrub(exc))
    if isinstance(exc, exceptions.NoAudioReceived):
        return "Edge TTS: the turn ended with no audio (NoAudioReceived)"
    if isinstance(exc, (ValueError, KeyError, exceptions.UnexpectedResponse, exceptions.UnknownResponse)):
        return "Edge TTS answered something that is not its protocol: %s: %s" % (name, scrub(exc))
    return "Edge TTS failed: %s: %s" % (name, scrub(exc))


@register("tts", "edge")
class EdgeTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("voice", "rate", "pitch", "volume", "proxy", "connect_timeout", "first_audio_timeout", "chunk_timeout")
    max_chars = 1000

    def __init__(self, config):
        super().__init__(config)
        try:
            import edge_tts  # noqa: F401  (aiohttp and certifi come with it)
            from edge_tts.data_classes import TTSConfig
        except ImportError as exc:
            raise ProviderUnavailable("edge TTS needs the edge-tts package (pip install edge-tts): %s" % exc)
        self.voice = config.get("voice") or DEFAULT_VOICE
        self.rate = _signed(config.get("rate", "+0%"), "%")
        self.pitch = _signed(config.get("pitch", "+0Hz"), "Hz")
        self.volume = _signed(config.get("volume", "+0%"), "%")
        # The package's own check of voice, rate, pitch and volume, now rather than at the first reply.
        TTSConfig(self.voice, self.rate, self.volume, self.pitch, "SentenceBoundary")
        self.proxy = config.get("proxy")
        self.connect_timeout = float(config.get("connect_timeout", 5))
        self.first_audio_timeout = float(config.get("first_audio_timeout", 5))
        self.chunk_timeout = float(config.get("chunk_timeout", 5))

    def __repr__(self):
        return "EdgeTts(%s, rate=%s, pitch=%s)" % (self.voice, self.rate, self.pitch)

    async def warm_up(self):
        """Load PyAV's MP3 decoder now, in the pool, not at the first reply."""
        await run_blocking(Mp3Stream)

    def _communicate(self, text, voice):
        import edge_tts
        return edge_tts.Communicate(
            text, voice or self.voice, rate=self.rate, pitch=self.pitch, volume=self.volume,
            proxy=self.proxy, connect_timeout=max(1, math.ceil(self.connect_timeout)),
            receive_timeout=max(1, math.ceil(self.chunk_timeout)))

    async def stream(self, text, voice=None):
        try:
            communicate = self._communicate(text, voice)
        except (TypeError, ValueError) as exc:   # a voice argument the package does not take
            raise TtsError("Edge TTS: %s" % exc)
        messages = communicate.stream()
        decoder = None
        try:
            wait = self.first_audio_timeout
            while True:
                try:
                    async with asyncio.timeout(wait):
                        message = await anext(messages)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    what = "no audio" if decoder is None else "no more audio"
                    raise TtsError("Edge TTS: %s within %.1f s" % (what, wait))
                if message["type"] != "audio":
                    continue   # sentence boundaries: not used
                if decoder is None:
                    decoder = await run_blocking(Mp3Stream)
                    wait = self.chunk_timeout
                pcm = await run_blocking(decoder.feed, message["data"])
                if pcm:
                    yield AudioChunk(pcm, decoder.rate or 24000)
            if communicate.state.get("chunk_audio_bytes"):
                # The package ends quietly when the connection drops after some
                # audio; the bytes it has not yet booked at a turn.end show it.
                raise TtsError("Edge TTS: the connection closed before the end of the turn")
            if decoder is not None:
                pcm = await run_blocking(decoder.flush)
                if pcm:
                    yield AudioChunk(pcm, decoder.rate or 24000)
        except TtsError:
            raise
        except AudioFormatError as exc:
            raise TtsError("Edge TTS audio unreadable: %s" % exc)
        except Exception as exc:   # aiohttp's and edge-tts's errors, a frame that breaks its parser
            raise TtsError(_describe(exc))
        finally:
            await messages.aclose()   # closes the WebSocket and its session

    async def synthesize(self, text, voice=None):
        pcm = bytearray()
        rate = 24000
        async for chunk in self.stream(text, voice):
            pcm += chunk.pcm
            rate = chunk.rate
        return AudioChunk(bytes(pcm), rate)
