"""listen stop while the VAD is still judging a batch: one judgement of the
stream at a time, and the push-to-talk reset only after it (issue 26).

The real silero VAD judges; the test only holds the first batch in the
VAD thread (an event the stream's prepare waits on), so `stop()` is sure
to come while that batch is in flight, however busy the machine."""
import asyncio
import threading

import opuslib

from testkit import audio
from xiaozhi_server.pipeline.asr import Transcriber
from xiaozhi_server.pipeline.listener import Listener
from xiaozhi_server.providers import create


class HeldStream:
    """The real VAD stream; its first batch waits in the VAD thread until released,
    and it records how many judgements were in flight at once and any reset
    that came during one."""

    def __init__(self, stream):
        self._stream = stream
        self.window = stream.window
        self.in_flight = 0
        self.most = 0
        self.reset_during_judgement = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self._first = True

    async def judge_after(self, prepare):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        first, self._first = self._first, False

        def held():
            if first:
                self.entered.set()
                self.release.wait(10)
            return prepare()
        try:
            return await self._stream.judge_after(held)
        finally:
            self.in_flight -= 1

    def reset(self):
        if self.in_flight:
            self.reset_during_judgement = True
        self._stream.reset()

    def probability(self, samples, offset=0):
        return self._stream.probability(samples, offset)


class HeldVad:
    def __init__(self):
        self.real = create("vad", {"type": "silero"})
        self.stream = None
        self.opened = threading.Event()

    def open(self):
        self.stream = HeldStream(self.real.open())
        self.opened.set()
        return self.stream


class Words:
    async def transcribe(self, pcm, language=None):
        return "words %d ms" % (len(pcm) // 32)


def opus_frames(pcm):
    enc = opuslib.Encoder(16000, 1, opuslib.APPLICATION_VOIP)
    return [enc.encode(pcm[i:i + 1920], 960) for i in range(0, len(pcm) - 1919, 1920)]


async def test_listen_stop_waits_for_the_batch_in_the_vad():
    vad = HeldVad()
    heard = []
    got = asyncio.Event()

    async def on_start():
        pass

    async def on_utterance(utt):
        heard.append(utt)
        got.set()

    lis = Listener(vad, Transcriber(Words()), on_start, on_utterance)
    frames = opus_frames(audio.speech("Hello my friend, how are you today", rate=16000) + audio.silence(300))
    lis.start("manual")
    lis.push(frames[0])
    assert await asyncio.to_thread(vad.opened.wait, 30)
    assert await asyncio.to_thread(vad.stream.entered.wait, 30)
    for f in frames[1:]:          # the rest queues behind the batch in the VAD
        lis.push(f)
    stop = asyncio.create_task(lis.stop())
    await asyncio.sleep(0.2)      # stop() has run as far as it can without the VAD
    vad.stream.release.set()
    await asyncio.wait_for(stop, 10)
    assert vad.stream.most == 1, "two judgements of one stream were in flight"
    assert not vad.stream.reset_during_judgement
    await asyncio.wait_for(got.wait(), 30)
    assert heard and heard[0].audio_ms > 1000   # the whole press was transcribed, after the last batch
    await lis.close()
