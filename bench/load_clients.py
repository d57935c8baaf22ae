"""The load generator: N devices in one process of their own, on 127.0.0.1 only.

Each device connects (spread over a ramp), says hello, and then keeps its
microphone streaming 60 ms Opus frames in real time for the whole run:
the question, then silence until the server's reply has finished, then
the question again. It times every reply frame as its speaker would play
it: playback starts with the first frame, each frame is due 60 ms after
the one before; a frame arriving after its due time is a gap the child
hears. Bounded in time (`seconds`, plus a short grace) and in count.

The parent process starts `run_clients` with multiprocessing and gets one
dict of totals back through a pipe.
"""
import asyncio
import os
import time

FRAME_S = 0.06
REPLY_TIMEOUT_S = 10.0
GRACE_S = 8.0            # after the run, time to let replies in flight finish
HOST = "127.0.0.1"


class ReplyClock:
    """Arrival of one reply's frames against the device's playback schedule."""

    def __init__(self):
        self.play_at = None
        self.frames = 0
        self.gaps = 0
        self.worst_gap = 0.0

    def frame(self, t):
        if self.play_at is None:
            self.play_at = t
        elif t > self.play_at:
            self.gaps += 1
            self.worst_gap = max(self.worst_gap, t - self.play_at)
            self.play_at = t       # the speaker ran dry; it plays this one now
        self.play_at += FRAME_S
        self.frames += 1


class LoadDevice:
    def __init__(self, index, url, speech, silence_packet):
        self.index = index
        self.url = url
        self.speech = speech
        self.silence = silence_packet
        self.ws = None
        self.replies = []          # finished ReplyClocks
        self.current = None
        self.speaking = False      # the server is in a reply (tts start .. stop)
        self.reply_done = asyncio.Event()
        self.connected = False
        self.error = None
        self.sent = 0
        self.send_lag = 0.0        # worst lateness of our own upstream frames (client loop busy)

    async def _read(self):
        import json
        import websockets
        try:
            async for m in self.ws:
                now = time.monotonic()
                if isinstance(m, bytes):
                    if self.current is None:
                        self.current = ReplyClock()
                    self.current.frame(now)
                    continue
                msg = json.loads(m)
                if msg.get("type") == "tts" and msg.get("state") == "start":
                    # A reply cut short by the next one ends without its own stop.
                    if self.current is not None:
                        self.replies.append(self.current)
                        self.current = None
                    self.speaking = True
                elif msg.get("type") == "tts" and msg.get("state") == "stop":
                    self.speaking = False
                    if self.current is not None:
                        self.replies.append(self.current)
                    self.current = None
                    self.reply_done.set()
        except websockets.ConnectionClosed:
            pass

    async def run(self, start_at, stop_at):
        import json
        import websockets
        from xiaozhi_server import protocol as proto
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        headers = {"Device-Id": "bench:load-%d" % self.index, "Client-Id": "bench-%d" % self.index,
                   "Protocol-Version": "1"}
        try:
            self.ws = await websockets.connect(self.url, additional_headers=headers, open_timeout=20,
                                               max_size=2 ** 20, compression=None)
            # No MCP feature: these devices serve no tools, so the server asks for none.
            ap = {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60}
            await self.ws.send(proto.encode(proto.hello_device(1, "websocket", ap)))
            hello = json.loads(await asyncio.wait_for(self.ws.recv(), 20))
            await self.ws.send(proto.encode(proto.listen(proto.LISTEN_START, session_id=hello.get("session_id"),
                                                         mode="auto")))
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
            return
        self.connected = True
        reader = asyncio.create_task(self._read())
        try:
            await self._stream(stop_at)
            # Let the reply in flight play out, so its frames are counted.
            if self.speaking:
                try:
                    await asyncio.wait_for(self.reply_done.wait(), GRACE_S)
                except asyncio.TimeoutError:
                    pass
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            await self.ws.close()
            reader.cancel()

    async def _stream(self, stop_at):
        origin = time.monotonic()
        k = 0
        pos = 0                    # index into the question; len(speech) = in silence
        waiting_since = None
        while True:
            due = origin + FRAME_S * (k + 1)
            now = time.monotonic()
            if due > now:
                await asyncio.sleep(due - now)
            else:
                self.send_lag = max(self.send_lag, now - due)
            if time.monotonic() >= stop_at:
                return
            if pos < len(self.speech):
                packet = self.speech[pos]
                pos += 1
                if pos == len(self.speech):
                    waiting_since = time.monotonic()
                    self.reply_done.clear()
            else:
                packet = self.silence
                answered = self.reply_done.is_set() and not self.speaking
                if answered or time.monotonic() - waiting_since > REPLY_TIMEOUT_S:
                    pos = 0        # the next question, in the next frame
            await self.ws.send(packet)
            self.sent += 1
            k += 1


async def _main(url, sessions, seconds, ramp_s, speech, silence_packet):
    t0 = time.monotonic()
    stop_at = t0 + ramp_s + seconds
    devs = [LoadDevice(i, url, speech, silence_packet) for i in range(sessions)]
    cpu0 = os.times()
    await asyncio.gather(*[d.run(t0 + ramp_s * i / max(1, sessions), stop_at) for i, d in enumerate(devs)])
    cpu1 = os.times()
    wall = time.monotonic() - t0
    replies = [r for d in devs for r in d.replies]
    errors = [d.error for d in devs if d.error]
    return {
        "connected": sum(1 for d in devs if d.connected),
        "errors": errors[:5],
        "error_count": len(errors),
        "replies": len(replies),
        "frames": sum(r.frames for r in replies) + sum(d.current.frames for d in devs if d.current),
        "gaps": sum(r.gaps for r in replies),
        "worst_gap": max([r.worst_gap for r in replies] or [0.0]),
        "sent": sum(d.sent for d in devs),
        "send_lag": max([d.send_lag for d in devs] or [0.0]),
        "cpu": (cpu1.user - cpu0.user + cpu1.system - cpu0.system) / wall,
    }


def run_clients(conn, port, path, sessions, seconds, ramp_s, speech, silence_packet):
    """Process entry point: drive the devices, send the totals back through `conn`."""
    url = "ws://%s:%d%s" % (HOST, port, path)
    try:
        conn.send(asyncio.run(_main(url, sessions, seconds, ramp_s, speech, silence_packet)))
    except Exception as e:
        conn.send({"failed": "%s: %s" % (type(e).__name__, e)})
