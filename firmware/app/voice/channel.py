# The xiaozhi WebSocket channel: connect, hello, receive, send.
#
#   ch = Channel(board.clock, identity, on_json, on_audio, on_closed)
#   (on_json and on_audio are awaited in order on the reading task)
#   ok = await ch.open(url, token, version)   # hello done, or False (logged)
#   await ch.send(proto.listen(...))           # any built message
#   await ch.send_audio(frame_buf, hs, n)      # hs header bytes + n Opus bytes
#   reply = await ch.call(method, params, timeout_ms)  # our JSON-RPC request
#
# After hello the channel reads on its own task: text messages are checked
# against the schema (unknown types and invalid messages are logged and
# ignored, as peers must), binary frames are unpacked for the negotiated
# version (v1 raw, v2 16-byte, v3 4-byte header) and handed to on_audio as
# a memoryview valid only until the next frame. Any end of the connection
# (close, reset, a protocol violation, 120 s of silence) calls on_closed
# once. Sends are serialised by a lock so two tasks never interleave frames.
# Our own JSON-RPC requests (ids from FIRST_CALL_ID up, far from the
# server's) travel inside mcp messages; their answers are taken out here and
# never reach on_json. A request still waiting when the channel ends gets None.
import asyncio
import gc

import log
import proto
import ws

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

DEAD_AFTER_MS = const(120000)   # nothing received for this long: the link is dead
CONNECT_TIMEOUT_MS = const(10000)
MAX_MESSAGE = const(8192)       # biggest message accepted (an mcp call, a subtitle)
FIRST_CALL_ID = const(1000000)  # our request ids, far from the server's own

_log = log.get("proto")


class Identity:
    def __init__(self, device_id, client_id):
        self.device_id = device_id
        self.client_id = client_id


async def _fire_after(clock, ms, ev):
    await clock.sleep_ms(ms)
    ev.set()


class Channel:
    def __init__(self, clock, identity, on_json, on_audio, on_closed):
        self._clock = clock
        self._id = identity
        self._on_json = on_json
        self._on_audio = on_audio
        self._on_closed = on_closed
        self._conn = None
        self._reader = None
        self._lock = asyncio.Lock()
        self.version = 1
        self.session_id = None
        self.server_hello = None
        self.last_rx = 0
        self.close_reason = None
        self.refusal = None              # why the server's certificate was refused
        # Every connection's buffers, made here at boot while the heap has
        # large blocks: hours of a lesson leave none of MAX_MESSAGE free,
        # and a connect must not need one (mqtt_as: nothing allocated anew
        # per reconnect that a fragmented heap could refuse).
        self._bufs = ws.Buffers(MAX_MESSAGE)
        self._calls = {}                 # our request id -> [Event, reply]
        self._call_id = FIRST_CALL_ID

    def is_open(self):
        return self._conn is not None and not self._conn.closed

    def headers(self, token, version):
        h = {"Protocol-Version": str(version), "Device-Id": self._id.device_id,
             "Client-Id": self._id.client_id}
        if token:
            h["Authorization"] = "Bearer " + token
        return h

    async def open(self, url, token, version, hello, hello_timeout_ms=proto.HELLO_TIMEOUT_MS):
        """Connect and exchange hello; True when the server answered in time."""
        self.version = version
        self.close_reason = None
        gc.collect()     # what the last connection left, before the next one needs it
        try:
            conn = await ws.connect(url, self.headers(token, version), timeout_ms=CONNECT_TIMEOUT_MS,
                                    buffers=self._bufs)
        except MemoryError:      # first: matching a tuple of classes allocates
            # The heap is short for a moment (a reply, a lesson): this
            # connect fails, the device's retry goes on.
            self.close_reason = "no_memory"
            gc.collect()
            try:
                _log.warn("no memory to connect to %s", url)
            except MemoryError:    # still none for the line itself: the reason is kept above
                pass
            return False
        except ws.CertificateRefused as e:
            # Not the server we trust: no hello, no plain retry, no OTA re-ask
            # (the device says so aloud: app/device.py).
            _log.error("%s", e)
            self.close_reason = "untrusted"
            self.refusal = e.reason
            return False
        except (ws.WSError, OSError, ValueError) as e:
            _log.warn("cannot connect to %s: %s", url, e)
            self.close_reason = "unreachable"    # the device asks OTA again (app/device.py)
            return False
        self._conn = conn
        try:
            await self._send_text(proto.encode(hello))
            got = await self._await_hello(hello_timeout_ms)
        except (ws.WSError, OSError, MemoryError) as e:
            gc.collect()
            _log.warn("hello failed: %r", e)
            got = False
        if not got:
            _log.warn("no server hello within %d ms", hello_timeout_ms)
            await self._drop("no hello")
            return False
        self.last_rx = self._clock.ticks_ms()
        self._reader = asyncio.create_task(self._read_loop())
        return True

    async def _await_hello(self, timeout_ms):
        # The hello wait runs on the board clock (fast in tests), not on the
        # socket's real-time timeouts.
        done = asyncio.Event()
        result = []

        async def read():
            try:
                while True:
                    kind, data = await self._conn.recv()
                    if kind == ws.CLOSE:
                        return
                    if kind != ws.TEXT:
                        continue
                    try:
                        msg = proto.decode_ws(data, proto.DOWN)
                    except proto.ProtoError as e:
                        _log.info("before hello, ignored: %s", e)
                        continue
                    if msg["type"] == "hello" and msg.get("transport") == "websocket":
                        result.append(msg)
                        return
            except (ws.WSError, OSError, MemoryError):
                return       # no hello: open() says so
            finally:
                done.set()

        reader = asyncio.create_task(read())
        timer = asyncio.create_task(_fire_after(self._clock, timeout_ms, done))
        await done.wait()
        timer.cancel()
        if not result:
            reader.cancel()
            return False
        self.server_hello = result[0]
        self.session_id = result[0].get("session_id")
        return True

    async def _read_loop(self):
        reason = "closed"
        watchdog = asyncio.create_task(self._watchdog())
        try:
            while True:
                kind, data = await self._conn.recv()
                self.last_rx = self._clock.ticks_ms()
                if kind == ws.CLOSE:
                    reason = "server closed (%s)" % (data[0],)
                    break
                if kind == ws.TEXT:
                    await self._text(data)
                else:
                    await self._binary(data)
        except ws.ProtocolError as e:
            reason = "protocol error: %s" % e
        except (ws.WSError, OSError) as e:
            reason = "connection lost: %s" % e
        except asyncio.CancelledError:
            reason = "closed by the device"
            raise
        finally:
            watchdog.cancel()
            self._reader = None
            await self._drop(reason)

    async def _text(self, text):
        try:
            msg = proto.decode_ws(text, proto.DOWN)
        except proto.ProtoError as e:
            if e.unknown:
                _log.info("ignored: %s", e)
            else:
                _log.warn("invalid message ignored: %s", e)
            return
        if msg["type"] == "mcp" and "method" not in msg["payload"]:
            slot = self._calls.get(msg["payload"].get("id"))
            if slot is not None:   # the answer to our own request
                slot[1] = msg["payload"]
                slot[0].set()
                return
        try:
            await self._on_json(msg)
        except Exception as e:  # one bad handler must not end the session
            _log.error("handling %s failed: %r", msg.get("type"), e)

    async def _binary(self, data):
        try:
            ftype, _ts, payload = proto.unpack_frame(self.version, data)
        except proto.ProtoError as e:
            _log.warn("bad audio frame ignored: %s", e)
            return
        if ftype == proto.FRAME_OPUS:
            await self._on_audio(payload)

    async def _watchdog(self):
        while True:
            await self._clock.sleep_ms(DEAD_AFTER_MS // 4)
            if self._clock.ticks_diff(self._clock.ticks_ms(), self.last_rx) > DEAD_AFTER_MS:
                _log.warn("nothing received for %d ms: closing", DEAD_AFTER_MS)
                if self._conn is not None:
                    self._conn.shutdown(ws.CLOSE_ABNORMAL, "dead link")
                return

    async def _drop(self, reason):
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            await conn.close(ws.CLOSE_NORMAL, "")  # also finishes a hang-up already begun
        except Exception:
            conn.shutdown(ws.CLOSE_ABNORMAL)
        self.close_reason = reason
        _log.info("channel closed: %s", reason)
        for slot in self._calls.values():
            slot[0].set()   # no answer will come: the caller sees None
        if self._reader is None and self.server_hello is not None:
            self.server_hello = None
            self._on_closed(reason)

    async def close(self, goodbye=None):
        """Close from the device side (goodbye first when given)."""
        if not self.is_open():
            return
        if goodbye is not None:
            try:
                await self.send(goodbye)
            except Exception:
                pass
        r = self._reader
        if r is not None:
            r.cancel()
            try:
                await r
            except BaseException:
                pass
        else:
            await self._drop("closed by the device")

    # ---- sending ----

    async def _send_text(self, text):
        async with self._lock:
            await self._conn.send_text(text)

    async def send(self, msg):
        """Send one built message; False when the channel is not open."""
        if not self.is_open():
            return False
        try:
            await self._send_text(proto.encode(msg))
            return True
        except (ws.WSError, OSError) as e:
            _log.warn("send failed: %s", e)
            return False

    async def send_audio(self, buf, n):
        """buf holds header_size(version) free bytes then n Opus bytes."""
        if not self.is_open():
            return False
        hs = proto.pack_header_into(self.version, buf, proto.FRAME_OPUS,
                                    self._clock.ticks_ms(), n)
        try:
            async with self._lock:
                await self._conn.send_binary(memoryview(buf)[:hs + n])
            return True
        except (ws.WSError, OSError) as e:
            _log.warn("audio send failed: %s", e)
            return False

    # ---- our JSON-RPC requests ----

    async def call(self, method, params, timeout_ms):
        """Send a JSON-RPC request in an mcp message and return the server's
        reply payload, or None when the channel ended before it came.
        asyncio.TimeoutError after timeout_ms (real time)."""
        self._call_id += 1
        rid = self._call_id
        slot = [asyncio.Event(), None]
        self._calls[rid] = slot
        try:
            if not await self.send(proto.mcp(proto.rpc_request(rid, method, params), self.session_id)):
                return None
            await asyncio.wait_for(slot[0].wait(), timeout_ms / 1000)
        finally:
            self._calls.pop(rid, None)
        return slot[1]
