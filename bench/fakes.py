"""Providers that stand in for ASR and TTS so a figure measures the server itself.

They do no CPU work: `delay` seconds of sleep model a cloud service's
latency (0 = instant). `TimedTts` wraps a real provider and records when
each call began and when its first audio came out, so the local figures
can be split per stage.
"""
import asyncio
import time

import numpy as np

from xiaozhi_server.providers.audio import AudioChunk
from xiaozhi_server.providers.tts.base import TtsProvider

PIPER_RATE = 22050   # a typical provider rate, so resampling stays in the measured path


class ScriptedAsr:
    """Hears the same words in every utterance, after `delay` seconds."""

    def __init__(self, text, delay=0.0):
        self.text = text
        self.delay = delay

    async def transcribe(self, pcm16k, language=None):
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.text


def tone_pcm(ms, rate=PIPER_RATE, hz=440.0, amplitude=6000):
    t = np.arange(rate * ms // 1000) / float(rate)
    return (np.sin(2 * np.pi * hz * t) * amplitude).astype("<i2").tobytes()


class ToneTts(TtsProvider):
    """Renders every sentence as the same fixed tone, after `delay` seconds."""

    def __init__(self, ms=300, delay=0.0, rate=PIPER_RATE):
        super().__init__({"type": "tone"})
        self.delay = delay
        self.rate = rate
        self.pcm = tone_pcm(ms, rate)

    async def synthesize(self, text, voice=None):
        if self.delay:
            await asyncio.sleep(self.delay)
        return AudioChunk(self.pcm, self.rate)


class TimedTts(TtsProvider):
    """A real TTS provider, with (called_at, first_audio_at) kept for every call."""

    def __init__(self, inner):
        super().__init__({"type": "timed"})
        self.inner = inner
        self.max_chars = inner.max_chars
        self.calls = []

    async def synthesize(self, text, voice=None):
        return await self.inner.synthesize(text, voice)

    async def stream(self, text, voice=None):
        mark = [time.monotonic(), None]
        self.calls.append(mark)
        async for chunk in self.inner.stream(text, voice):
            if mark[1] is None:
                mark[1] = time.monotonic()
            yield chunk
