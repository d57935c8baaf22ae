# The voice channel's connects when the heap is short: a board playing a
# lesson for a long time has a heap full of small survivors with no large
# free block left, and a lost server must still be reconnected to, as many
# times as it is lost (mqtt_as's rule: survive network loss).
#
# The server here is a small xiaozhi one in the same process (the unix
# port's asyncio): it answers the upgrade and the hello, then hangs up
# without a Close, as a killed server's kernel does.
import binascii
import gc
import hashlib
import sys
import time

import asyncio
import proto
import t
import ws
from app.voice.channel import Channel, Identity

_MP = sys.implementation.name == "micropython"
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Clock:
    def ticks_ms(self):
        return time.ticks_ms() if _MP else int(time.monotonic() * 1000)

    def ticks_diff(self, a, b):
        return time.ticks_diff(a, b) if _MP else a - b

    async def sleep_ms(self, ms):
        await asyncio.sleep(ms / 1000)


def _frame(text):
    """One unmasked TEXT frame, as a server sends it."""
    data = text.encode()
    n = len(data)
    head = bytes([0x81, n]) if n < 126 else bytes([0x81, 126, n >> 8, n & 0xFF])
    return head + data


async def _serve(served):
    async def handle(reader, writer):
        key = b""
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            if line.lower().startswith(b"sec-websocket-key:"):
                key = line.split(b":", 1)[1].strip()
        accept = binascii.b2a_base64(hashlib.sha1(key + _GUID).digest()).strip()
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        try:
            head = await reader.readexactly(2)       # the device's hello, masked
            n = head[1] & 0x7F
            if n == 126:
                b = await reader.readexactly(2)
                n = (b[0] << 8) | b[1]
            await reader.readexactly(4 + n)
        except (EOFError, OSError):                  # the client went away first
            writer.close()
            await writer.wait_closed()
            return
        served.append(1)
        writer.write(_frame(proto.encode(proto.hello_server("s%d" % len(served), {
            "format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60}))))
        await writer.drain()
        writer.close()                               # killed: no Close frame
        await writer.wait_closed()
    srv, port = await t.serve(handle)
    return srv, "ws://127.0.0.1:%d/xiaozhi/v1/" % port


def _fragment():
    """Fill the heap with 1 KB blocks and free every other one: plenty of
    memory free, none of it in a block of 8 KB (MicroPython; CPython has no
    fixed heap). Returns what must stay alive."""
    if not _MP:
        return None
    held, spare = [], []
    try:
        while True:
            held.append(bytearray(1024))
            spare.append(bytearray(1024))
    except MemoryError:
        pass
    spare = None
    gc.collect()
    t.raises(MemoryError, bytearray, 8192)   # the heap has no 8 KB block any more
    t.true(gc.mem_free() > 32 * 1024, "memory is free, in small blocks")
    return held


async def test_channel_reconnects_again_and_again_on_a_heap_without_large_blocks():
    """Three kills of the server: during and between the connections the
    board's life (a lesson, logs, events) fills the heap with small
    survivors, so no connect finds a large free block; each must still
    connect."""
    closed = []
    ch = Channel(Clock(), Identity("aa:bb:cc:dd:ee:01", "c-1"), _ignore, _ignore, closed.append)
    hello = proto.hello_device(1, "websocket", {"format": "opus", "sample_rate": 16000,
                                                "channels": 1, "frame_duration": 60})
    served, held = [], []
    srv, url = await _serve(served)
    try:
        for i in range(3):
            held.append(_fragment())
            ok = await ch.open(url, "tok", 1, hello, 5000)
            t.true(ok, "connect %d on the fragmented heap: %s" % (i + 1, ch.close_reason))
            t.eq(ch.session_id, "s%d" % (i + 1), "the server's session")
            held.append(_fragment())                 # a lesson plays meanwhile
            while len(closed) <= i:                  # the server hangs up
                await asyncio.sleep(0.01)
            t.true(not ch.is_open(), "closed after the hang-up")
    finally:
        held = None
        srv.close()
        await srv.wait_closed()
    t.eq(len(served), 3)


async def test_a_connect_on_a_full_heap_fails_cleanly_and_the_next_one_connects():
    """No memory at all for a connect: open() says False (the device's retry
    goes on), it does not raise; memory back, the next connect works."""
    closed = []
    ch = Channel(Clock(), Identity("aa:bb:cc:dd:ee:02", "c-2"), _ignore, _ignore, closed.append)
    hello = proto.hello_device(1, "websocket", {"format": "opus", "sample_rate": 16000,
                                                "channels": 1, "frame_duration": 60})
    served = []
    srv, url = await _serve(served)
    try:
        if _MP:
            full = _fill()
            ok = await ch.open(url, "tok", 1, hello, 5000)
            full = None
            gc.collect()
            t.true(not ok, "no connect without memory")
            t.true(not ch.is_open(), "nothing half open")
        ok = await ch.open(url, "tok", 1, hello, 5000)
        t.true(ok, "connect once memory is back: %s" % ch.close_reason)
        while not closed:
            await asyncio.sleep(0.01)
    finally:
        srv.close()
        await srv.wait_closed()


async def test_a_newer_connection_takes_the_buffers_and_the_older_counts_as_closed():
    """One Buffers serves one connection at a time: once a newer connect
    has them, the older never reads into them again (it is closed)."""
    bufs = ws.Buffers(1024)
    served = []
    srv, url = await _serve(served)
    try:
        old = await ws.connect(url, None, 5000, buffers=bufs)
        new = await ws.connect(url, None, 5000, buffers=bufs)
        t.true(bufs.owner is new and new.max_size == 1024, "the newer one uses them")
        t.raises(ws.ConnectionClosed, _sync, old.recv())
        t.true(old.closed, "the older is closed")
        await new.send_text('{"type":"hello"}')
        kind, text = await new.recv()
        t.eq((kind, proto.decode_json(text)["type"]), (ws.TEXT, "hello"))
        await old.close()
        await new.close()
    finally:
        srv.close()
        await srv.wait_closed()


def _sync(coro):
    """Run a coroutine that finishes without waiting (its first step)."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    raise AssertionError("it waited")


def _fill():
    """Every free block taken (a chain of pairs: no list grows and leaves
    its old array as garbage a collection would give back)."""
    held = None
    gc.collect()
    for size in (4096, 256):
        try:
            while True:
                held = [bytearray(size), held]
        except MemoryError:
            pass
    return held


async def _ignore(*_):
    pass
