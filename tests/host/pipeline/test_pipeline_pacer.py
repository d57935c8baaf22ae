import asyncio
import time

from xiaozhi_server.pipeline.pacer import Pacer

FRAME = 0.060


class VirtualClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    async def sleep(self, delay):
        self.now += max(0.0, delay)
        await asyncio.sleep(0)


def make(clock, **kw):
    sent = []

    async def send(frame):
        sent.append((clock(), frame))

    return Pacer(send, clock=clock, sleep=clock.sleep, record=True, **kw), sent


async def test_never_more_than_three_frames_ahead_of_play_time():
    clock = VirtualClock()
    pacer, sent = make(clock)
    for i in range(50):  # the producer hands frames over instantly
        assert await pacer.send(b"f%d" % i)
    start = sent[0][0]
    for n, (t, _frame) in enumerate(sent):
        play_at = start + n * FRAME
        assert play_at - t <= 3 * FRAME + 1e-9
    # Only the first four go out at once; then one per frame time.
    assert [round(t - start, 3) for t, _ in sent[:6]] == [0, 0, 0, 0, 0.06, 0.12]
    assert pacer.max_ahead <= 3 * FRAME + 1e-9 and pacer.frames == 50 and pacer.underruns == 0


async def test_drain_waits_until_the_last_frame_has_played():
    clock = VirtualClock()
    pacer, sent = make(clock)
    for i in range(10):
        await pacer.send(b"x")
    assert await pacer.drain()
    assert clock() >= sent[0][0] + 10 * FRAME - 1e-9


async def test_a_slow_producer_reanchors_instead_of_bursting():
    clock = VirtualClock()
    pacer, sent = make(clock)
    for i in range(5):
        await pacer.send(b"a")
    clock.now += 2.0  # the TTS stalls: the device ran dry
    for i in range(8):
        await pacer.send(b"b")
    resumed = sent[5][0]
    gaps = [round(sent[i + 1][0] - sent[i][0], 3) for i in range(5, 12)]
    assert gaps == [0, 0, 0, 0.06, 0.06, 0.06, 0.06]  # again at most 3 ahead
    assert pacer.underruns == 1 and pacer.max_ahead <= 3 * FRAME + 1e-9
    assert resumed - sent[4][0] >= 2.0


async def test_cancel_stops_within_one_frame_in_real_time():
    sent = []

    async def send(frame):
        sent.append(time.monotonic())

    pacer = Pacer(send)
    results = []

    async def speak():
        for i in range(200):
            ok = await pacer.send(b"x")
            results.append(ok)
            if not ok:
                return

    task = asyncio.create_task(speak())
    await asyncio.sleep(0.3)
    cancelled_at = time.monotonic()
    pacer.cancel()
    await asyncio.wait_for(task, 1.0)
    stopped_at = time.monotonic()
    assert results[-1] is False
    assert not [t for t in sent if t > cancelled_at]
    assert stopped_at - cancelled_at < 0.5  # loose bound; the reported figure is below
    print("cancel to stop: %.1f ms; max late %.1f ms" % ((stopped_at - cancelled_at) * 1000, pacer.max_late * 1000))
    assert not await pacer.drain()
    pacer.reset()
    assert await pacer.send(b"next reply") and pacer.frames == 1


async def test_many_replies_on_the_shared_ticks_never_run_ahead_of_the_device():
    """Thirty replies at once, started at odd moments, wait on the process's
    one tick timer: every frame of every reply still leaves no earlier than
    three frames before it plays, and every reply sends all its frames."""
    async def sink(frame):
        pass

    async def reply(i):
        await asyncio.sleep(0.007 * i)      # off the tick grid on purpose
        pacer = Pacer(sink, record=True)
        for _ in range(12):
            assert await pacer.send(b"x")
        assert await pacer.drain()
        return pacer

    pacers = await asyncio.gather(*(reply(i) for i in range(30)))
    assert all(p.frames == 12 for p in pacers)
    aheads = [ahead for p in pacers for _sent, ahead, _late in p.records]
    assert max(aheads) <= 3 * FRAME + 1e-6
