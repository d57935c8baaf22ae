"""Many sessions share one silero model: each still hears only its own child."""
import asyncio

import numpy as np

from testkit import audio
from xiaozhi_server.pipeline.turn import EndOfTurnDetector
from xiaozhi_server.providers import create


def one_at_a_time(pcm):
    """Each window judged alone, the way a session with its own model would."""
    stream = create("vad", {"type": "silero"}).open()
    samples = np.frombuffer(pcm, dtype="<i2")
    w = stream.window
    return [stream.probability(samples, k) for k in range(0, len(samples) // w * w, w)]


async def test_sessions_judged_together_get_their_own_verdicts():
    spoken = audio.silence(300) + audio.speech("The little cat is playing with a red ball.") + audio.silence(900)
    quiet = audio.silence(len(spoken) // 32)
    vad = create("vad", {"type": "silero"})
    # Eight sessions at once, every other one speaking, each fed 60 ms device frames.
    detectors = [EndOfTurnDetector(vad.open()) for _ in range(8)]
    inputs = [spoken if i % 2 == 0 else quiet for i in range(8)]
    events = [[] for _ in detectors]
    probs = [[] for _ in detectors]

    async def listen(i):
        det, pcm = detectors[i], inputs[i]
        for pos in range(0, len(pcm), 1920):
            windows, raw = det.take(pcm[pos:pos + 1920])
            p = await det.vad.judge(windows) if len(windows) else []
            probs[i] += [float(x) for x in p]
            events[i] += det.judge(p, raw)

    calls0, windows0 = vad.batcher.calls, vad.batcher.windows
    await asyncio.gather(*[listen(i) for i in range(8)])
    # Model calls judged several sessions' windows at once.
    assert vad.batcher.windows - windows0 > vad.batcher.calls - calls0
    alone_spoken, alone_quiet = one_at_a_time(spoken), one_at_a_time(quiet)
    for i in range(8):
        alone = alone_spoken if i % 2 == 0 else alone_quiet
        assert np.allclose(probs[i], alone, atol=1e-4), i
        kinds = [e.kind for e in events[i]]
        assert kinds == (["start", "end"] if i % 2 == 0 else []), (i, kinds)


async def test_a_session_closing_mid_verdict_does_not_deafen_the_others():
    vad = create("vad", {"type": "silero"})
    spoken = audio.speech("Hello there, little one.")
    leaving, staying = EndOfTurnDetector(vad.open()), EndOfTurnDetector(vad.open())
    for _ in range(20):
        # The leaving session's listener is cancelled while the VAD thread has its windows.
        windows, _raw = leaving.take(spoken)
        task = asyncio.create_task(leaving.vad.judge(windows))
        await asyncio.sleep(0)
        task.cancel()
    windows, raw = staying.take(audio.silence(300) + spoken + audio.silence(900))
    probs = await asyncio.wait_for(staying.vad.judge(windows), 60)   # a dead VAD thread would hang here
    assert [e.kind for e in staying.judge(probs, raw)] == ["start", "end"]
