"""A local stand-in for Volcengine's (Doubao's) speech services on
127.0.0.1, speaking their binary WebSocket framing from the public docs:
4-byte header (version 1 | header size 1; message type | flags;
serialization | compression; reserved), an optional int32 sequence
(flags bit 0), an error code (error messages), a uint32 payload size, and
the payload (gzip when byte 2 says so).

Paths, as the services':
- /api/v2/asr (classic streaming ASR): `Authorization: Bearer; <token>`
  and the same token in the request's `app`; results as full server
  responses with `code` 1000, `sequence` and `result` [{text, utterances}],
  the last with a negative sequence; a wrong token gets an error message
  (type 0b1111) with code 1002.
- /api/v3/sauc/bigmodel (big-model streaming ASR): X-Api-App-Key,
  X-Api-Access-Key, X-Api-Resource-Id headers; results with the sequence
  in the header (flags 0b0001, 0b0011 and a negative one on the last) and
  `result` {text, utterances}; a wrong key is refused at the handshake (401).
- /api/v1/tts/ws_binary (TTS): `Authorization: Bearer; <token>`; an ACK,
  then audio-only server responses (0b1011) of 100 ms of a 330 Hz tone at
  the requested rate, sequence 1, 2, ... and negative on the last; a wrong
  token gets an error message with code 3001.

    with FakeVolcengine(token="tok") as volc:
        volc.say("今天天气怎么样", "今天天气怎么样？")   # streamed pieces, then the final text
        volc.fault("cut")                                # the next connection's behaviour
        volc.connections[-1].request    # the decoded full client request
        volc.connections[-1].audio      # the PCM it sent; .packets: each audio request's size
        volc.connections[-1].headers

ASR: every 600 ms of audio received gets a result with the next two
characters of the streamed text. Faults (one per connection): "silent"
(audio taken, nothing answered), "cut" (dropped after the first audio),
"garbage" (a text frame), "stall" (TTS: nothing after the first audio), "malformed" (a frame whose payload size runs
past its end), "server_error" (an error message, code 1022 / 55000031 /
3031 by service).
"""
import gzip
import json
import struct
import threading

from testkit import audio
from testkit.threaded_server import ThreadedWsServer

__all__ = ["FakeVolcengine", "TONE_HZ"]

TONE_HZ = 330
BYTES_PER_PIECE = 19200   # 600 ms of 16 kHz PCM per streamed piece of text


def frame(message_type, flags, payload, serialization=1, compression=1, sequence=None, code=None):
    if serialization == 1 and not isinstance(payload, bytes):
        payload = json.dumps(payload, ensure_ascii=False).encode()
    if compression == 1:
        payload = gzip.compress(payload)
    out = bytes([0x11, (message_type << 4) | flags, (serialization << 4) | compression, 0])
    if sequence is not None:
        out += struct.pack(">i", sequence)
    if code is not None:
        out += struct.pack(">I", code)
    return out + struct.pack(">I", len(payload)) + payload


def parse_client(data):
    """(message type, flags, payload): the client's frames, as the doc defines them."""
    assert data[0] == 0x11, data[:4]
    mtype, flags = data[1] >> 4, data[1] & 0x0F
    ser, comp = data[2] >> 4, data[2] & 0x0F
    pos = 4 + (4 if flags & 1 else 0)
    size = struct.unpack_from(">I", data, pos)[0]
    body = data[pos + 4:pos + 4 + size]
    assert len(body) == size
    if comp == 1:
        body = gzip.decompress(body)
    return mtype, flags, json.loads(body) if ser == 1 else body


class Turn:
    def __init__(self, online="", final=None, fault=None):
        self.online = online
        self.final = online if final is None else final
        self.fault = fault


class Connection:
    def __init__(self, path, headers):
        self.path = path
        self.headers = headers
        self.request = None
        self.audio = bytearray()
        self.packets = []
        self.ended = False
        self.closed = threading.Event()


class FakeVolcengine(ThreadedWsServer):
    name = "fake-volcengine"
    serve_options = {"compression": None, "max_size": 1 << 22}

    def __init__(self, token="test-token", access_key="test-key", default_text="你好"):
        self.token = token
        self.access_key = access_key
        self.default_text = default_text
        self.connections = []
        self._script = []
        self._lock = threading.Lock()

    def say(self, online, final=None):
        self._script.append(Turn(online, final))
        return self

    def fault(self, name):
        self._script.append(Turn(fault=name))
        return self

    def _next(self):
        with self._lock:
            return self._script.pop(0) if self._script else Turn(self.default_text)

    @property
    def url(self):
        return "ws://127.0.0.1:%d" % self.port

    # --- the protocol ------------------------------------------------
    async def _process_request(self, connection, request):
        connection.turn = self._next()
        if request.path == "/api/v3/sauc/bigmodel" and request.headers.get("X-Api-Access-Key") != self.access_key:
            return connection.respond(401, '{"error": "requested grant not found"}\n')
        if request.path not in ("/api/v2/asr", "/api/v3/sauc/bigmodel", "/api/v1/tts/ws_binary"):
            return connection.respond(404, "Not Found\n")
        return None

    async def _handle(self, ws):
        conn = Connection(ws.request.path, ws.request.headers)   # case-insensitive
        with self._lock:
            self.connections.append(conn)
        try:
            if conn.path == "/api/v1/tts/ws_binary":
                await self._tts(ws, ws.turn, conn)
            else:
                await self._asr(ws, ws.turn, conn, bigmodel=conn.path.startswith("/api/v3"))
        finally:
            conn.closed.set()

    def _authorised(self, conn, request):
        bearer = conn.headers.get("Authorization") == "Bearer; %s" % self.token
        return bearer and request.get("app", {}).get("token") == self.token

    async def _asr(self, ws, turn, conn, bigmodel):
        pieces = [turn.online[i:i + 2] for i in range(0, len(turn.online), 2)]
        heard = ""
        seq = 1
        async for data in ws:
            mtype, flags, payload = parse_client(data)
            if mtype == 1:
                conn.request = payload
                if not bigmodel and not self._authorised(conn, payload):
                    await ws.send(frame(0b1111, 0, {"reqid": payload["request"]["reqid"], "code": 1002,
                                                    "message": "auth failed: invalid token"}, code=1002))
                    await ws.wait_closed()
                    return
                if not bigmodel:   # the classic service answers the request itself
                    await ws.send(self._result(conn, bigmodel, "", seq))
                continue
            before = len(conn.audio) // BYTES_PER_PIECE
            conn.audio += payload
            conn.packets.append(len(payload))
            last = bool(flags & 0b0010)
            if turn.fault == "cut":
                ws.transport.abort()
                return
            if turn.fault == "garbage":
                await ws.send("<html>502 Bad Gateway</html>")
                continue
            if turn.fault == "malformed":
                await ws.send(frame(0b1001, 0, {"code": 1000}, compression=0)[:-3])
                continue
            if turn.fault == "server_error":
                code = 55000031 if bigmodel else 1022
                await ws.send(frame(0b1111, 0, b"server busy", serialization=0, compression=0, code=code))
                continue
            if not turn.fault:
                for _ in range(len(conn.audio) // BYTES_PER_PIECE - before):
                    if pieces:
                        heard += pieces.pop(0)
                        seq += 1
                        await ws.send(self._result(conn, bigmodel, heard, seq))
            if last:
                conn.ended = True
                break
        if conn.ended and not turn.fault:
            await ws.send(self._result(conn, bigmodel, turn.final, -(seq + 1), definite=True))
        await ws.wait_closed()

    def _result(self, conn, bigmodel, text, seq, definite=False):
        utterance = {"text": text, "start_time": 0, "end_time": len(conn.audio) // 32, "definite": definite}
        if bigmodel:
            body = {"audio_info": {"duration": len(conn.audio) // 32},
                    "result": {"text": text, "utterances": [utterance] if text else []}}
            return frame(0b1001, 0b0011 if seq < 0 else 0b0001, body, sequence=seq)
        body = {"reqid": conn.request["request"]["reqid"], "code": 1000, "message": "Success",
                "sequence": seq, "result": [{"text": text, "confidence": 0,
                                             "utterances": [utterance] if text else []}]}
        return frame(0b1001, 0, body)

    async def _tts(self, ws, turn, conn):
        mtype, flags, payload = parse_client(await ws.recv())
        conn.request = payload
        if not self._authorised(conn, payload):
            await ws.send(frame(0b1111, 0, {"reqid": payload["request"]["reqid"],
                                            "error": "authenticate request: load grant: requested grant not found"},
                                code=3001))
            await ws.wait_closed()
            return
        if turn.fault == "silent":
            await ws.wait_closed()
            return
        rate = payload["audio"]["rate"]
        pcm = audio.tone(TONE_HZ, 600, rate)
        step = rate // 10 * 2 + 1   # 100 ms and a byte: pieces split samples, as the wire may
        pieces = [pcm[i:i + step] for i in range(0, len(pcm), step)]
        await ws.send(frame(0b1011, 0, b"", serialization=0, compression=0)[:4])   # the ACK
        for n, piece in enumerate(pieces, 1):
            if n == 2 and turn.fault == "cut":
                ws.transport.abort()
                return
            if n == 2 and turn.fault == "stall":
                break
            if n == 2 and turn.fault == "garbage":
                await ws.send("<html>502 Bad Gateway</html>")
                break
            if n == 2 and turn.fault == "malformed":
                await ws.send(frame(0b1011, 0b0001, piece, serialization=0, compression=0, sequence=n)[:-7])
                break
            if turn.fault == "server_error":
                await ws.send(frame(0b1111, 0, {"error": "synthesis failed"}, code=3031))
                break
            seq = -n if n == len(pieces) else n
            await ws.send(frame(0b1011, 0b0011 if seq < 0 else 0b0001, piece, serialization=0, compression=0,
                                sequence=seq))
        await ws.wait_closed()
