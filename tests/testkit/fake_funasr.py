"""A scripted FunASR runtime server on 127.0.0.1, speaking its WebSocket
protocol (modelscope/FunASR runtime/docs/websocket_protocol.md, with the
C++ 2pass server's result flags):

    from testkit.fake_funasr import FakeFunAsr

    with FakeFunAsr() as funasr:
        funasr.say("今天天气怎么样", "今天天气怎么样？")   # online pieces come from the first, the final is the second
        funasr.fault("never_answer")                       # the next connection's behaviour
        asr = create("asr", {"type": "funasr", "url": funasr.url})
        ...
        funasr.connections[0].first   # the client's first JSON message
        funasr.connections[0].audio   # the PCM bytes it sent
        funasr.connections[0].ended   # True once {"is_speaking": false} came
        funasr.connections[0].authorization   # its Authorization header, if any

One scripted turn per connection, in order; with none left the server
answers `default_text`. While audio comes in, every chunk of
chunk_size[1] * 60 ms (600 ms for [5, 10, 5]) gets a `2pass-online`
message (mode `online` in online mode) with the next two characters of
the streaming text, `is_final` false, as the server's streaming model
emits pieces without punctuation. After `{"is_speaking": false}` the rest
of the streaming text goes out, then the corrected text as `2pass-offline`
(`offline` in offline mode) with `is_final` true and a `timestamp`.
`offline_is_final=False` answers as the C++ offline server does.

`hold_finals()` keeps every final result (the offline pass) back until
`release_finals()`, so a test can act while the child's words are known
only in part, without a race against the clock.

Faults (one per connection): "reject_401" (handshake refused), "never_answer" (audio taken, no result),
"cut" (the connection dropped after the first audio), "garbage" (a text
frame that is not JSON), "no_text" (a JSON result whose text is a number).
"""
import asyncio
import json
import threading

from websockets.exceptions import ConnectionClosed

from testkit.threaded_server import BACKLOG, ThreadedWsServer

__all__ = ["FakeFunAsr", "Connection"]

BYTES_PER_60MS = 1920


class Turn:
    def __init__(self, online="", final=None, fault=None, offline_is_final=True, flags="cpp",
                 late_segment=""):
        self.online = online
        self.final = online if final is None else final
        self.fault = fault
        self.offline_is_final = offline_is_final
        self.flags = flags
        self.late_segment = late_segment


class Connection:
    """What one client connection sent."""

    def __init__(self, headers):
        self.authorization = headers.get("Authorization")
        self.first = None
        self.audio = bytearray()
        self.ended = False
        self.closed = threading.Event()


class FakeFunAsr(ThreadedWsServer):
    name = "fake-funasr"

    def __init__(self, default_text="你好", ssl=None, final_delay_s=0.0):
        """ssl: a server SSLContext (then `url` is wss://); final_delay_s: the
        offline pass's time, from the end of speech to the final result."""
        self.default_text = default_text
        self.ssl = ssl
        self.final_delay_s = final_delay_s
        self.connections = []
        self._script = []
        self._lock = threading.Lock()
        self.serve_options = {"compression": None, "ssl": ssl, "backlog": BACKLOG}
        self._held = False
        self._release = None

    # --- scripting ---------------------------------------------------
    def say(self, online, final=None, offline_is_final=True, flags="cpp", late_segment=""):
        """The next connection hears `online` (streamed pieces) and `final`.
        flags="python": is_final as FunASR's Python server sets it (= is_speaking).
        late_segment: an earlier segment's correction sent after the end of
        speech, unflagged, before the final (a busy C++ server)."""
        self._script.append(Turn(online, final, offline_is_final=offline_is_final, flags=flags,
                                 late_segment=late_segment))
        return self

    def hold_finals(self):
        """From now on, final results wait for release_finals()."""
        self._held = True
        return self

    def release_finals(self):
        self._held = False
        self._loop.call_soon_threadsafe(self._release.set)

    def fault(self, name):
        self._script.append(Turn(fault=name))
        return self

    def _next(self):
        with self._lock:
            if self._script:
                return self._script.pop(0)
        return Turn(self.default_text)

    # --- the protocol ------------------------------------------------
    async def _process_request(self, connection, request):
        turn = self._next()
        connection.turn = turn
        if turn.fault == "reject_401":
            return connection.respond(401, "Unauthorized\n")
        return None

    async def _handle(self, ws):
        turn = ws.turn
        conn = Connection(ws.request.headers)
        with self._lock:
            self.connections.append(conn)
        try:
            await self._converse(ws, turn, conn)
        except ConnectionClosed:
            pass   # the client went away (a dropped utterance): nothing more to say
        finally:
            conn.closed.set()

    async def _converse(self, ws, turn, conn):
        pieces = [turn.online[i:i + 2] for i in range(0, len(turn.online), 2)]
        chunk = None
        async for frame in ws:
            if isinstance(frame, str):
                msg = json.loads(frame)
                if conn.first is None:
                    conn.first = msg
                    chunk = BYTES_PER_60MS * int(msg.get("chunk_size", [5, 10, 5])[1])
                    continue
                if msg.get("is_speaking") is False:
                    conn.ended = True
                    break
                continue
            before = len(conn.audio) // chunk
            conn.audio += frame
            if turn.fault == "cut":
                ws.transport.abort()
                return
            if turn.fault == "garbage":
                await ws.send("<html>502 Bad Gateway</html>")
                continue
            if turn.fault == "no_text":
                await ws.send(json.dumps({"mode": "2pass-online", "text": 42, "is_final": False}))
                continue
            if turn.fault:
                continue
            for _ in range(len(conn.audio) // chunk - before):
                if pieces:
                    await ws.send(self._result(conn, "online", pieces.pop(0), turn.flags == "python"))
        if not conn.ended or turn.fault:
            if turn.fault == "never_answer":
                await ws.wait_closed()
            return
        mode = conn.first.get("mode", "2pass")
        python = turn.flags == "python"
        if mode != "offline" and not python:   # the Python server drops streaming results after the end
            for piece in pieces:
                await ws.send(self._result(conn, "online", piece, False))
        if self.final_delay_s:
            await asyncio.sleep(self.final_delay_s)
        if self._held:
            released = asyncio.ensure_future(self._release.wait())
            gone = asyncio.ensure_future(ws.wait_closed())
            await asyncio.wait({released, gone}, return_when=asyncio.FIRST_COMPLETED)
            released.cancel()
            gone.cancel()
            if not released.done() or released.cancelled():
                return   # the client closed the connection while the final was held
        if turn.late_segment:
            await ws.send(self._result(conn, "offline", turn.late_segment, False))
        if mode != "online":
            await ws.send(self._result(conn, "offline", turn.final, turn.offline_is_final and not python))
        else:
            await ws.send(self._result(conn, "online", "", True))
        # The runtime keeps the connection open; the client closes it.
        await ws.wait_closed()

    @staticmethod
    def _result(conn, kind, text, is_final):
        mode = conn.first.get("mode", "2pass")
        name = kind if mode != "2pass" else "2pass-" + kind
        msg = {"mode": name, "wav_name": conn.first.get("wav_name"), "text": text, "is_final": is_final}
        if kind == "offline":
            msg["timestamp"] = json.dumps([[100 + 200 * i, 300 + 200 * i] for i in range(len(text))])
        return json.dumps(msg, ensure_ascii=False)

    # --- lifecycle -----------------------------------------------------
    def _started(self):
        self._release = asyncio.Event()

    def _stopping(self):
        self._release.set()     # a final held back must not hold the loop at stop

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("wss" if self.ssl else "ws", self.port)
