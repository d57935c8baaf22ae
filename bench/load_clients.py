"""The load generator: N devices in one process of their own.

Each device speaks the xiaozhi WebSocket protocol as stock devices do, so
it can drive this server or any other (the stock xiaozhi-server too): the
headers Device-Id, Client-Id, Protocol-Version and, with a token,
Authorization; a hello with 16 kHz 60 ms Opus; `listen start` in auto
mode, and again after every `tts stop` (as stock firmware does). Then
its microphone streams 60 ms Opus frames in real time for the whole run:
the question, then silence until the reply has finished
(`tts stop`), then the question again. Its silence is a microphone's: a
faint noise floor (a short loop of noise frames the parent encoded once),
never digital zeros, which no real device sends and a server could skip
for free.

Per turn it times what the child would notice: the end of the question
(when the frame with its last spoken sample leaves) to the first reply
frame arriving. A turn with no reply audio within REPLY_TIMEOUT_S is a
failed turn. Every reply frame is timed against the device's playback
schedule: playback starts with the first frame, each frame is due 60 ms
after the one before; a frame arriving after its due time is late by
that much (the speaker ran dry) and playback goes on from it.

After `seconds` no new question starts; a turn in flight is waited for
(at most REPLY_TIMEOUT_S plus the reply), so every question asked is
either answered or failed. The parent starts `run_clients` with
multiprocessing and gets one dict of totals back through a pipe.
"""
import asyncio
import json
import os
import time
import uuid

FRAME_S = 0.06
REPLY_TIMEOUT_S = 10.0
GRACE_S = REPLY_TIMEOUT_S + 20.0   # after the run: turns in flight finish (bound for the parent)
MAX_SESSIONS = 2000


class ReplyClock:
    """Arrival of one reply's frames against the device's playback schedule."""

    def __init__(self):
        self.play_at = None
        self.frames = 0
        self.lates = []            # seconds each frame was late (0.0 on time)

    def frame(self, t):
        if self.play_at is None:
            self.play_at = t
        late = max(0.0, t - self.play_at)
        self.lates.append(late)
        if late:
            self.play_at = t       # the speaker ran dry; it plays this one now
        self.play_at += FRAME_S
        self.frames += 1


class LoadDevice:
    def __init__(self, index, url, speech, quiet_packets, token=None):
        self.index = index
        self.url = url
        self.speech = speech
        self.quiet = quiet_packets
        self.token = token
        self.ws = None
        self.session_id = None
        self.replies = []          # ReplyClocks of replies heard
        self.current = None
        self.speaking = False      # the server is in a reply (tts start .. stop)
        self.question_end = None   # monotonic end of the question awaiting its answer
        self.stale_reply = False   # a reply that began before the question ended (an opener)
        self.first_audio = []      # seconds from end of question to its first reply frame
        self.failed = 0
        self.connected = False
        self.error = None
        self.sent = 0
        self.send_lag = 0.0        # worst lateness of our own upstream frames (client loop busy)

    def _reply_done(self):
        if self.current is not None:
            self.replies.append(self.current)
            self.current = None

    async def _read(self):
        import websockets
        try:
            async for m in self.ws:
                now = time.monotonic()
                if isinstance(m, bytes):
                    if self.current is None:
                        self.current = ReplyClock()
                    self.current.frame(now)
                    if self.question_end is not None and not self.stale_reply:
                        self.first_audio.append(now - self.question_end)
                        self.question_end = None
                    continue
                try:
                    msg = json.loads(m)
                except ValueError:
                    continue
                if msg.get("type") != "tts":
                    continue
                if msg.get("state") == "start":
                    self._reply_done()     # a reply cut short by the next one ends without its own stop
                    self.speaking = True
                    self.stale_reply = False
                elif msg.get("state") == "stop":
                    self.speaking = False
                    self.stale_reply = False
                    self._reply_done()
                    await self._listen()   # as stock firmware does: back to listening (resets a stock server's VAD)
        except websockets.ConnectionClosed:
            pass

    async def _open(self):
        import websockets
        from xiaozhi_server import protocol as proto
        # A MAC and a UUID, as stock firmware sends them (stock servers key devices by MAC).
        i = self.index
        headers = {"Device-Id": "02:00:00:00:%02x:%02x" % (i >> 8 & 0xff, i & 0xff),
                   "Client-Id": str(uuid.UUID(int=i + 1)), "Protocol-Version": "1"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        self.ws = await websockets.connect(self.url, additional_headers=headers, open_timeout=30,
                                           max_size=2 ** 20, compression=None)
        # No MCP feature: these devices serve no tools, so the server asks for none.
        ap = {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60}
        await self.ws.send(proto.encode(proto.hello_device(1, "websocket", ap)))
        while True:
            hello = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if hello.get("type") == "hello":
                break
        self.session_id = hello.get("session_id")
        await self._listen()

    async def _listen(self):
        from xiaozhi_server import protocol as proto
        await self.ws.send(proto.encode(proto.listen(proto.LISTEN_START, session_id=self.session_id, mode="auto")))

    async def run(self, start_at, stop_at):
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        try:
            await self._open()
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
            return
        self.connected = True
        reader = asyncio.create_task(self._read())
        try:
            await self._stream(stop_at)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            reader.cancel()
            await self.ws.close()

    async def _stream(self, stop_at):
        origin = time.monotonic()
        k = 0
        pos = 0                    # index into the question; len(speech) = in silence
        while True:
            due = origin + FRAME_S * (k + 1)
            now = time.monotonic()
            if due > now:
                await asyncio.sleep(due - now)
            else:
                self.send_lag = max(self.send_lag, now - due)
            now = time.monotonic()
            if pos == len(self.speech):
                if self.question_end is not None and now - self.question_end > REPLY_TIMEOUT_S:
                    self.failed += 1           # no reply audio in time
                    self.question_end = None
                if self.question_end is None and not self.speaking:
                    if now >= stop_at:
                        return                 # run over, nothing in flight
                    pos = 0                    # the next question
                elif now >= stop_at + GRACE_S - 5.0:
                    return                     # a reply that never stops
            last = False
            if pos < len(self.speech):
                packet = self.speech[pos]
                pos += 1
                last = pos == len(self.speech)
            else:
                packet = self.quiet[(self.index + k) % len(self.quiet)]
            await self.ws.send(packet)
            self.sent += 1
            k += 1
            if last:
                # The frame with the last spoken sample has left: the child has finished.
                self.question_end = time.monotonic()
                self.stale_reply = self.speaking


async def _main(url, sessions, seconds, ramp_s, speech, quiet_packets, token):
    t0 = time.monotonic()
    stop_at = t0 + ramp_s + seconds
    devs = [LoadDevice(i, url, speech, quiet_packets, token) for i in range(sessions)]
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
        "lates": [x for r in replies for x in r.lates],
        "first_audio": [x for d in devs for x in d.first_audio],
        "failed_turns": sum(d.failed for d in devs),
        "sent": sum(d.sent for d in devs),
        "send_lag": max([d.send_lag for d in devs] or [0.0]),
        "cpu": (cpu1.user - cpu0.user + cpu1.system - cpu0.system) / wall,
    }


def run_clients(conn, url, sessions, seconds, ramp_s, speech, quiet_packets, token=None):
    """Process entry point: drive the devices, send the totals back through `conn`."""
    try:
        if not 0 < sessions <= MAX_SESSIONS:
            raise ValueError("sessions must be 1..%d, not %d" % (MAX_SESSIONS, sessions))
        conn.send(asyncio.run(_main(url, sessions, seconds, ramp_s, speech, quiet_packets, token)))
    except Exception as e:
        conn.send({"failed": "%s: %s" % (type(e).__name__, e)})
