"""A local stand-in for Microsoft Edge's read-aloud service on 127.0.0.1,
speaking its WebSocket protocol as the edge-tts package (7.x) talks it:

- the client connects to .../edge/v1?TrustedClientToken=..&ConnectionId=..
  &Sec-MS-GEC=..&Sec-MS-GEC-Version=.. and sends two text frames, each
  headers ("Name:value" lines, CRLF) then a blank line then a body:
  `Path:speech.config` (JSON: outputFormat audio-24khz-48kbitrate-mono-mp3)
  and `Path:ssml` (<speak><voice name=..><prosody pitch rate volume>text);
- the service answers text frames `Path:turn.start`, `Path:audio.metadata`
  (JSON {"Metadata": [{"Type": "SentenceBoundary", "Data": {...}}]}) and
  finally `Path:turn.end`, and binary frames: a 2-byte big-endian header
  length, the headers (`Path:audio`, `Content-Type:audio/mpeg`), then MP3
  bytes; the last binary frame has no Content-Type and no audio.

    with FakeEdgeTts() as edge:
        monkeypatch.setattr(edge_tts.communicate, "WSS_URL", edge.endpoint)   # the one test seam
        edge.fault("cut")                  # the next connection's behaviour
        edge.connections[-1].voice         # the voice the SSML asked for

The audio is a 330 Hz tone of `seconds` per request, encoded by lame at
24 kHz 48 kbit/s mono, sent in 1 KB frames (not aligned to MP3 frames).
`hold_after_first` keeps the rest of the audio back until `release` is set.

Faults (one per connection): "reject_403" (handshake refused, with a Date
header as the service sends), "silent" (turn.start, then nothing),
"cut_before_audio", "cut" (dropped after the first audio frame), "stall"
(nothing more after the first audio frame),
"garbage" (a text frame that is no header block), "bad_binary" (a header
length past the frame's end), "bad_mp3" (well-framed audio that is not
MP3), "no_audio" (turn.start then turn.end).
"""
import asyncio
import json
import re
import subprocess
import threading

from testkit import audio
from testkit.threaded_server import ThreadedWsServer

__all__ = ["FakeEdgeTts", "TONE_HZ", "CLIENT_TOKEN"]

TONE_HZ = 330
CLIENT_TOKEN = "6A5AA1D4EAFF4E9FB37E23D68491D6F4"   # the public token edge-tts sends
PATH = "/consumer/speech/synthesize/readaloud/edge/v1"
FRAME = 1024


def mp3_tone(seconds):
    pcm = audio.tone(TONE_HZ, int(seconds * 1000), 24000)
    return subprocess.run(["lame", "--quiet", "-r", "-s", "24", "-b", "48", "--bitwidth", "16", "--signed",
                           "--little-endian", "-m", "m", "-", "-"],
                          input=pcm, capture_output=True, check=True).stdout


def text_frame(request_id, path, body):
    return ("X-RequestId:%s\r\nContent-Type:application/json; charset=utf-8\r\nPath:%s\r\n\r\n%s"
            % (request_id, path, body))


def audio_frame(request_id, data, content_type="audio/mpeg"):
    head = "X-RequestId:%s\r\n" % request_id
    if content_type:
        head += "Content-Type:%s\r\n" % content_type
    head += "X-StreamId:%s\r\nPath:audio\r\n" % request_id
    head = head.encode()
    return len(head).to_bytes(2, "big") + head + data


def parse_text(frame):
    head, _, body = frame.partition("\r\n\r\n")
    headers = dict(line.split(":", 1) for line in head.split("\r\n"))
    return headers, body


class Connection:
    """What one client connection sent."""

    def __init__(self, path):
        self.path = path          # with its query (the token, ConnectionId, Sec-MS-GEC)
        self.config = None        # the speech.config JSON
        self.ssml = None
        self.voice = self.rate = self.pitch = self.text = None
        self.finished = False     # turn.end was sent
        self.closed = threading.Event()


class FakeEdgeTts(ThreadedWsServer):
    name = "fake-edge-tts"

    def __init__(self, seconds=0.6):
        self.seconds = seconds
        self.mp3 = mp3_tone(seconds)
        self.connections = []
        self.hold_after_first = False
        self.release = threading.Event()
        self._faults = []
        self._lock = threading.Lock()

    def fault(self, name):
        self._faults.append(name)
        return self

    def _next_fault(self):
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    @property
    def endpoint(self):
        """What to put in edge_tts.communicate.WSS_URL."""
        return "ws://127.0.0.1:%d%s?TrustedClientToken=%s" % (self.port, PATH, CLIENT_TOKEN)

    # --- the protocol ------------------------------------------------
    async def _process_request(self, connection, request):
        connection.fault = self._next_fault()
        if not request.path.startswith(PATH + "?"):
            return connection.respond(404, "Not Found\n")
        if connection.fault == "reject_403":
            return connection.respond(403, "Forbidden\n")   # websockets adds the Date header
        return None

    async def _handle(self, ws):
        conn = Connection(ws.request.path)
        with self._lock:
            self.connections.append(conn)
        try:
            await self._converse(ws, ws.fault, conn)
        finally:
            conn.closed.set()

    async def _converse(self, ws, fault, conn):
        request_id = "0"
        async for frame in ws:
            headers, body = parse_text(frame)
            if headers.get("Path") == "speech.config":
                conn.config = json.loads(body)
            elif headers.get("Path") == "ssml":
                request_id = headers["X-RequestId"]
                conn.ssml = body
                conn.voice = re.search(r"<voice name='([^']*)'>", body).group(1)
                conn.rate = re.search(r"rate='([^']*)'", body).group(1)
                conn.pitch = re.search(r"pitch='([^']*)'", body).group(1)
                conn.text = re.sub(r"<[^>]+>", "", body)
                break
        await ws.send(text_frame(request_id, "turn.start", '{"context":{"serviceTag":"fake"}}'))
        if fault == "silent":
            await ws.wait_closed()
            return
        if fault == "cut_before_audio":
            ws.transport.abort()
            return
        if fault == "garbage":
            await ws.send("<html><body>502 Bad Gateway</body></html>")
            await ws.wait_closed()
            return
        if fault == "bad_binary":
            await ws.send(b"\x40\x00Path:audio")
            await ws.wait_closed()
            return
        if fault != "no_audio":
            data = bytes(range(256)) * 8 if fault == "bad_mp3" else self.mp3
            for i in range(0, len(data), FRAME):
                await ws.send(audio_frame(request_id, data[i:i + FRAME]))
                if i == 0 and fault == "cut":
                    ws.transport.abort()
                    return
                if i == 0 and fault == "stall":
                    await ws.wait_closed()
                    return
                if i == 0 and self.hold_after_first:
                    await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 30)
            meta = {"Metadata": [{"Type": "SentenceBoundary", "Data": {
                "Offset": 1000000, "Duration": int(self.seconds * 1e7),
                "text": {"Text": conn.text, "Length": len(conn.text), "BoundaryType": "SentenceBoundary"}}}]}
            await ws.send(text_frame(request_id, "audio.metadata", json.dumps(meta, ensure_ascii=False)))
            await ws.send(audio_frame(request_id, b"", content_type=None))
        conn.finished = True
        await ws.send(text_frame(request_id, "turn.end", "{}"))
        await ws.wait_closed()   # the client closes

    def stop(self):
        self.release.set()   # a connection held back must not hold the loop at stop
        super().stop()
