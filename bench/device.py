"""A device taking turns over the wire, timed the way its user would time them.

It speaks like a xiaozhi device in auto mode: the microphone's 60 ms Opus
frames go out as they are captured (frame k, covering [60k, 60k+60) ms,
leaves at origin + 60(k+1) ms), silence keeps flowing after the words
until the server starts speaking, then the device only listens until
`tts stop` and sends `listen start` again.

`realtime=False` sends the words and a silence tail at once instead, for
figures that need many turns fast and are measured on the server's side.
"""
import asyncio
import time

from testkit.wire_device import WireDevice, opus_frames

from .speech import silence

FRAME_S = 0.06
FAST_TAIL_MS = 900
OPENER_WAIT_S = 2.5     # the server's grace before its opener, and then some
MAX_TAIL_S = 10.0       # no answer by then: the turn is counted as lost


class Utterance:
    """Opus frames of words followed by silence, and where the words end."""

    def __init__(self, pcm16k, tail_ms=MAX_TAIL_S * 1000):
        self.speech_ms = len(pcm16k) // 32
        self.packets = opus_frames(pcm16k + silence(int(tail_ms)))
        self.speech_frames = (self.speech_ms + 59) // 60


class TurnTimes:
    __slots__ = ("speech_end", "first_audio", "stopped", "frames")

    def __init__(self, speech_end, first_audio, stopped, frames):
        self.speech_end = speech_end      # wall clock of the last spoken sample
        self.first_audio = first_audio    # first reply frame received, or None
        self.stopped = stopped            # `tts stop` received, or None
        self.frames = frames              # reply frames received


async def open_device(url, device_id):
    dev = WireDevice(url, device_id=device_id, mcp=True)
    await dev.connect()
    await dev.hello()
    await dev.listen_start("auto")
    await _let_opener_finish(dev)
    return dev


async def _let_opener_finish(dev, wait_s=OPENER_WAIT_S):
    """Chat may speak first on entry; the device listens to that before its user talks."""
    try:
        await dev.wait_for(lambda: dev.find("tts", state="start"), timeout=wait_s)
    except AssertionError:
        return
    await dev.wait_for(lambda: dev.find("tts", state="stop"), timeout=MAX_TAIL_S)
    await dev.listen_start("auto")


async def take_turns(url, device_id, utt, turns, settle_s=0.3):
    """A device connects, says `utt` `turns` times in real time and hangs up:
    (a TurnTimes per turn, the stt texts it was sent)."""
    dev = await open_device(url, device_id)
    try:
        times = [await take_turn(dev, utt) for _ in range(turns)]
        await asyncio.sleep(settle_s)    # the last turn's stt, if it is late
        return times, [m["text"] for _t, m in dev.json if m.get("type") == "stt"]
    finally:
        await dev.close()


async def take_turn(dev, utt, realtime=True, reply_timeout=MAX_TAIL_S):
    since = time.monotonic()
    origin = since
    if realtime:
        k = 0
        while k < len(utt.packets) and dev.find("tts", since, state="start") is None:
            delay = origin + FRAME_S * (k + 1) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await dev.send_audio(utt.packets[k])
            k += 1
    else:
        for p in utt.packets[:utt.speech_frames + FAST_TAIL_MS // 60]:
            await dev.send_audio(p)
    speech_end = origin + utt.speech_ms / 1000.0
    stopped = None
    try:
        t, _m = await dev.wait_for(lambda: dev.find("tts", since, state="stop"), timeout=reply_timeout)
        stopped = t
    except AssertionError:
        pass
    audio = [t for t, _p in dev.audio if t >= since]
    await dev.listen_start("auto")
    return TurnTimes(speech_end, audio[0] if audio else None, stopped, len(audio))
