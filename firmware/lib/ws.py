# asyncio WebSocket client (RFC 6455) for MicroPython and CPython.
#
#   conn = await ws.connect("ws://host:8000/xiaozhi/v1/", headers, timeout_ms=10000)
#   bufs = ws.Buffers(8192)            # once, at boot: every connect reuses them
#   conn = await ws.connect(url, headers, buffers=bufs)
#   await conn.send_text('{"type":"hello"}')
#   await conn.send_binary(opus_frame)
#   kind, data = await conn.recv()     # TEXT -> str, BINARY -> memoryview,
#                                      # CLOSE -> (code, reason)
#   await conn.close(1000, "bye")
#
# What it does: ws:// and wss://, extra handshake headers, a handshake
# timeout, client masking, reassembly of fragmented messages, automatic pong
# for every ping, the close handshake, and a limit on message size.
# Protocol violations by the server (reserved bits, unknown opcodes, masked
# or oversized control frames, bad UTF-8, stray continuations) fail the
# connection with the RFC's close code and raise ProtocolError; afterwards
# `closed` is True and every call raises ConnectionClosed.
#
# Memory: the header, mask, control and send buffers and one receive buffer
# of `max_size` bytes (a Buffers) are allocated once per connection, or
# never when connect() is handed a Buffers made at boot: a device that
# reconnects for days then needs no large block from a heap its life has
# fragmented (one connection at a time uses a Buffers: a newer connect
# takes it over, and the older connection counts as closed). A BINARY message is
# returned as a memoryview into that receive buffer, valid only until the
# next recv(): copy it (bytes(data)) to keep it. On MicroPython frames are
# read with readinto(), so receiving allocates nothing per binary frame.
# Limits: no extensions (no permessage-deflate), no subprotocols, no
# redirects. TLS checks are those of the `ssl_context` given, else the
# board's (lib/trust.py: its CA bundle, host name checked). A server
# certificate the context refuses raises CertificateRefused (its
# `reason` says why); a wss:// URL is never tried in plain.
import sys
import os
import binascii
import hashlib
import random

import asyncio

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_MP = sys.implementation.name == "micropython"

TEXT = const(1)
BINARY = const(2)
CLOSE = const(8)
_CONT = const(0)
_PING = const(9)
_PONG = const(10)

CLOSE_NORMAL = const(1000)
CLOSE_PROTOCOL = const(1002)
CLOSE_NO_STATUS = const(1005)
CLOSE_ABNORMAL = const(1006)
CLOSE_BAD_DATA = const(1007)
CLOSE_TOO_BIG = const(1009)

DEFAULT_MAX_SIZE = const(65536)
_CHUNK = const(256)  # masking goes through a send buffer of this size
_HEADER_LIMIT = const(8192)  # bytes of HTTP response headers accepted
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WSError(Exception):
    pass


class HandshakeError(WSError):
    """The server did not upgrade: `status` is its HTTP status (0 if none)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class CertificateRefused(HandshakeError):
    """The server's TLS certificate did not pass the context's checks."""

    def __init__(self, url, reason):
        super().__init__(0, "server certificate of %s refused: %s" % (url, reason))
        self.reason = reason


class ProtocolError(WSError):
    """The peer broke RFC 6455; `code` is the close code we sent."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class MessageTooBig(ProtocolError):
    pass


class ConnectionClosed(WSError):
    pass


def parse_url(url):
    """(secure, host, port, path) of a ws:// or wss:// URL."""
    if url.startswith("ws://"):
        secure, rest = False, url[5:]
    elif url.startswith("wss://"):
        secure, rest = True, url[6:]
    else:
        raise ValueError("not a ws:// or wss:// URL: %s" % url)
    i = rest.find("/")
    hostport, path = (rest, "/") if i < 0 else (rest[:i], rest[i:])
    if hostport.startswith("["):  # [v6]:port
        j = hostport.find("]")
        host, tail = hostport[1:j], hostport[j + 1:]
        port = int(tail[1:]) if tail.startswith(":") else (443 if secure else 80)
    elif ":" in hostport:
        host, p = hostport.rsplit(":", 1)
        port = int(p)
    else:
        host, port = hostport, 443 if secure else 80
    if not host:
        raise ValueError("no host in URL: %s" % url)
    return secure, host, port, path


def _accept_for(key):
    return binascii.b2a_base64(hashlib.sha1(key + _GUID).digest()).strip()


if _MP:
    async def _wait_ms(coro, ms):
        return await asyncio.wait_for_ms(coro, ms)
else:
    async def _wait_ms(coro, ms):
        return await asyncio.wait_for(coro, ms / 1000)


async def connect(url, headers=None, timeout_ms=10000, max_size=DEFAULT_MAX_SIZE,
                  ssl_context=None, server_hostname=None, buffers=None):
    """Open a connection; HandshakeError on refusal or timeout. With
    `buffers` (a Buffers) the connection uses them and its max_size."""
    secure, host, port, path = parse_url(url)
    headers = headers or {}
    for name, value in headers.items():
        value = str(value)
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError("bad header %r" % name)
    conn = WebSocket(max_size, buffers)
    try:
        await _wait_ms(conn._open(secure, host, port, path, headers,
                                  ssl_context, server_hostname), timeout_ms)
    except asyncio.TimeoutError:
        conn.shutdown(CLOSE_ABNORMAL)
        raise HandshakeError(0, "handshake with %s timed out after %d ms" % (url, timeout_ms))
    except (OSError, ValueError) as e:
        # ValueError: MicroPython's ssl reports a certificate it rejects so
        conn.shutdown(CLOSE_ABNORMAL)
        why = None
        if secure:
            import trust    # only with TLS: a plain board never loads it
            why = trust.refusal(e)
        if why:
            raise CertificateRefused(url, why)
        raise HandshakeError(0, "cannot connect to %s: %s" % (url, str(e).strip()))
    except BaseException:
        conn.shutdown(CLOSE_ABNORMAL)
        raise
    return conn


class Buffers:
    """What one connection reads and writes through, for a message of up to
    max_size bytes; made once and handed to each connect in turn."""

    def __init__(self, max_size=DEFAULT_MAX_SIZE):
        self.max_size = max_size
        self.owner = None          # the connection using them now
        self.rbuf = bytearray(max_size)   # first, the one large block
        self.rbuf_mv = memoryview(self.rbuf)
        self.hdr = bytearray(14)
        self.hdr_mv = memoryview(self.hdr)
        self.mask = bytearray(4)
        self.sbuf = bytearray(_CHUNK)
        self.sbuf_mv = memoryview(self.sbuf)
        self.small = bytearray(8)  # frame header bytes being read
        self.small_mv = memoryview(self.small)
        self.ctrl = bytearray(125)
        self.ctrl_mv = memoryview(self.ctrl)


class WebSocket:
    def __init__(self, max_size=DEFAULT_MAX_SIZE, buffers=None):
        b = buffers if buffers is not None else Buffers(max_size)
        b.owner = self
        self._bufs = b
        self.max_size = b.max_size
        self.closed = False
        self.close_code = None
        self.close_reason = ""
        self._reader = self._writer = None
        self._closing = None   # a writer closed but not yet waited for
        self._hdr, self._hdr_mv, self._mask = b.hdr, b.hdr_mv, b.mask
        self._sbuf, self._sbuf_mv = b.sbuf, b.sbuf_mv
        self._small, self._small_mv = b.small, b.small_mv
        self._ctrl, self._ctrl_mv = b.ctrl, b.ctrl_mv
        self._rbuf, self._rbuf_mv = b.rbuf, b.rbuf_mv
        self._wlock = asyncio.Lock()
        self._close_sent = False
        self._reading = False
        self._closed_ev = asyncio.Event()

    # ---- handshake ----
    async def _open(self, secure, host, port, path, headers, ssl_context, server_hostname):
        ctx = None
        if secure:
            # The board's CA bundle unless told otherwise; TrustError (no
            # bundle) ends the connect here: never a plain try instead.
            if ssl_context is None:
                import trust
                ssl_context = trust.context()
            ctx = ssl_context
        if ctx is not None:
            self._reader, self._writer = await asyncio.open_connection(
                host, port, ssl=ctx, server_hostname=server_hostname or host)
        else:
            trust = sys.modules.get("trust")     # loaded only on a board with a CA bundle
            if trust is not None:
                trust.plain("ws", host, port)
            self._reader, self._writer = await asyncio.open_connection(host, port)
        key = binascii.b2a_base64(os.urandom(16)).strip()
        default_port = 443 if secure else 80
        lines = ["GET %s HTTP/1.1" % path,
                 "Host: %s" % (host if port == default_port else "%s:%d" % (host, port)),
                 "Upgrade: websocket", "Connection: Upgrade",
                 "Sec-WebSocket-Key: %s" % key.decode(), "Sec-WebSocket-Version: 13"]
        for name, value in headers.items():
            lines.append("%s: %s" % (name, value))
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self._writer.drain()
        status, reason, got = await self._read_response()
        if status != 101:
            raise HandshakeError(status, "server refused the WebSocket upgrade: %d %s" % (status, reason))
        if got.get("upgrade", "").lower() != "websocket" or \
                "upgrade" not in got.get("connection", "").lower():
            raise HandshakeError(status, "response is not a WebSocket upgrade")
        if got.get("sec-websocket-accept", "").encode() != _accept_for(key):
            raise HandshakeError(status, "bad Sec-WebSocket-Accept from server")

    async def _read_response(self):
        line = await self._reader.readline()
        used = len(line)
        parts = line.decode().strip().split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise HandshakeError(0, "not an HTTP response: %r" % line[:60])
        try:
            status = int(parts[1])
        except ValueError:
            raise HandshakeError(0, "bad HTTP status line: %r" % line[:60])
        got = {}
        while True:
            line = await self._reader.readline()
            used += len(line)
            if used > _HEADER_LIMIT:
                raise HandshakeError(status, "HTTP response headers too long")
            if not line:
                raise HandshakeError(status, "connection closed during handshake")
            if line in (b"\r\n", b"\n"):
                break
            text = line.decode()
            i = text.find(":")
            if i > 0:
                got[text[:i].strip().lower()] = text[i + 1:].strip()
        return status, parts[2] if len(parts) > 2 else "", got

    # ---- low-level I/O ----
    async def _read_into(self, mv):
        """Fill mv completely; EOFError when the peer went away."""
        if _MP:
            got, n = 0, len(mv)
            while got < n:
                r = await self._reader.readinto(mv[got:])
                if r is None:
                    continue  # TLS record not complete yet
                if r == 0:
                    raise EOFError()
                got += r
        else:
            data = await self._reader.readexactly(len(mv))
            mv[:] = data

    def _write(self, mv):
        # CPython transports may keep a reference to what they could not
        # send at once; our buffers are reused, so hand them a copy there.
        self._writer.write(mv if _MP else bytes(mv))

    def _gone(self):
        # Closed, or its Buffers taken over by a newer connection (which
        # this one must not write into): nothing more goes through it.
        if self._bufs.owner is not self and not self.closed:
            self.shutdown(CLOSE_ABNORMAL, "buffers taken by a newer connection")
        return self.closed

    async def _send_frame(self, opcode, payload):
        if self._gone():
            raise ConnectionClosed("connection is closed")
        n = len(payload)
        h = self._hdr
        h[0] = 0x80 | opcode
        if n < 126:
            h[1] = 0x80 | n
            hl = 2
        elif n < 65536:
            h[1] = 0x80 | 126
            h[2] = n >> 8
            h[3] = n & 0xFF
            hl = 4
        else:
            h[1] = 0x80 | 127
            for i in range(8):
                h[2 + i] = (n >> (56 - 8 * i)) & 0xFF
            hl = 10
        m = self._mask
        r = random.getrandbits(16)
        m[0] = r >> 8
        m[1] = r & 0xFF
        r = random.getrandbits(16)
        m[2] = r >> 8
        m[3] = r & 0xFF
        h[hl:hl + 4] = m
        sb = self._sbuf
        async with self._wlock:
            try:
                self._write(self._hdr_mv[:hl + 4])
                off = 0
                while off < n:
                    k = min(_CHUNK, n - off)
                    for i in range(k):
                        sb[i] = payload[off + i] ^ m[(off + i) & 3]
                    self._write(self._sbuf_mv[:k])
                    off += k
                await self._writer.drain()
            except OSError as e:
                self.shutdown(CLOSE_ABNORMAL)
                raise ConnectionClosed("send failed: %s" % e)

    # ---- sending ----
    async def send_text(self, text):
        await self._send_frame(TEXT, text.encode() if isinstance(text, str) else text)

    async def send_binary(self, buf):
        await self._send_frame(BINARY, buf)

    async def ping(self, payload=b""):
        await self._send_frame(_PING, payload)

    async def _send_close(self, code, reason):
        if self._close_sent or self.closed:
            return
        self._close_sent = True
        body = bytearray(2)
        body[0] = code >> 8
        body[1] = code & 0xFF
        body += reason.encode()[:123]
        try:
            await self._send_frame(CLOSE, body)
        except WSError:
            pass

    # ---- receiving ----
    async def recv(self):
        """The next message: (TEXT, str), (BINARY, memoryview) or (CLOSE, (code, reason))."""
        if self._gone():
            raise ConnectionClosed("connection is closed")
        self._reading = True
        try:
            return await self._recv()
        except EOFError:
            self.shutdown(CLOSE_ABNORMAL, "connection lost")
            return CLOSE, (CLOSE_ABNORMAL, "connection lost")
        except OSError as e:
            self.shutdown(CLOSE_ABNORMAL, str(e))
            return CLOSE, (CLOSE_ABNORMAL, str(e))
        finally:
            self._reading = False

    async def _fail(self, code, message, exc=ProtocolError):
        await self._send_close(code, message)
        # Hanging up with unread bytes makes the kernel send a TCP reset,
        # which can destroy our Close before the server reads it: read
        # what is left until the server hangs up (or briefly, if it won't).
        try:
            await _wait_ms(self._discard_until_eof(), 1000)
        except (asyncio.TimeoutError, OSError, EOFError):
            pass
        self.shutdown(code, message)
        raise exc(code, message)

    async def _discard_until_eof(self):
        while True:
            if _MP:
                n = await self._reader.readinto(self._ctrl_mv)
                if n is None:
                    continue
            else:
                n = len(await self._reader.read(125))
            if not n:
                return

    async def _recv(self):
        small = self._small_mv
        msg_op = None
        total = 0
        while True:
            await self._read_into(small[:2])
            b0, b1 = self._small[0], self._small[1]
            fin = b0 & 0x80
            op = b0 & 0x0F
            if b0 & 0x70:
                await self._fail(CLOSE_PROTOCOL, "reserved bits set without an extension")
            if b1 & 0x80:
                await self._fail(CLOSE_PROTOCOL, "server frames must not be masked")
            n = b1 & 0x7F
            if n == 126:
                await self._read_into(small[:2])
                n = (self._small[0] << 8) | self._small[1]
            elif n == 127:
                await self._read_into(small[:8])
                n = 0
                for i in range(8):
                    n = (n << 8) | self._small[i]
            if op >= 8:
                if op not in (CLOSE, _PING, _PONG):
                    await self._fail(CLOSE_PROTOCOL, "unknown control opcode %d" % op)
                if not fin or n > 125:
                    await self._fail(CLOSE_PROTOCOL, "fragmented or oversized control frame")
                body = self._ctrl_mv[:n]
                await self._read_into(body)
                if op == _PING:
                    await self._send_frame(_PONG, body)
                elif op == CLOSE:
                    return CLOSE, await self._on_close(body)
                continue
            if op == _CONT:
                if msg_op is None:
                    await self._fail(CLOSE_PROTOCOL, "continuation frame without a message")
            elif op in (TEXT, BINARY):
                if msg_op is not None:
                    await self._fail(CLOSE_PROTOCOL, "new message inside a fragmented one")
                msg_op = op
            else:
                await self._fail(CLOSE_PROTOCOL, "unknown opcode %d" % op)
            if total + n > self.max_size:
                await self._fail(CLOSE_TOO_BIG, "message larger than %d bytes" % self.max_size,
                                 MessageTooBig)
            await self._read_into(self._rbuf_mv[total:total + n])
            total += n
            if fin:
                break
        data = self._rbuf_mv[:total]
        if msg_op == TEXT:
            try:
                return TEXT, str(data, "utf-8")
            except UnicodeError:
                await self._fail(CLOSE_BAD_DATA, "text message is not UTF-8")
        return BINARY, data

    async def _on_close(self, body):
        n = len(body)
        if n == 0:
            code, reason = CLOSE_NO_STATUS, ""
        elif n == 1:
            await self._fail(CLOSE_PROTOCOL, "close frame with a 1-byte body")
        else:
            code = (body[0] << 8) | body[1]
            try:
                reason = str(body[2:], "utf-8")
            except UnicodeError:
                reason = ""
        # Answer the peer's close with the same code (RFC 6455 5.5.1).
        await self._send_close(CLOSE_NORMAL if code == CLOSE_NO_STATUS else code, "")
        self.shutdown(code, reason)
        return code, reason

    # ---- closing ----
    async def close(self, code=CLOSE_NORMAL, reason="", timeout_ms=2000):
        """Close handshake: send Close, wait for the server's Close, hang up.

        Also finishes the hang-up of a connection that already ended (a
        protocol violation, a lost link), so callers can always end with it.
        """
        if not self.closed:
            await self._send_close(code, reason)
            try:
                await _wait_ms(self._await_close(), timeout_ms)
            except asyncio.TimeoutError:
                pass
            self.shutdown(code, reason)
        await self._hang_up()

    async def _hang_up(self):
        # StreamWriter.close() alone leaves the socket open on the MicroPython
        # unix port (the peer then waits ~10 s for the FIN); wait_closed()
        # really closes it, on CPython it waits for the transport to finish.
        w, self._closing = self._closing, None
        if w is not None and hasattr(w, "wait_closed"):
            try:
                await w.wait_closed()
            except Exception:
                pass

    async def _await_close(self):
        if self._reading:  # another task's recv() will see the reply
            await self._closed_ev.wait()
            return
        while not self.closed:
            try:
                await self.recv()  # data after our Close is dropped
            except WSError:
                return

    def shutdown(self, code, reason=""):
        """Drop the connection now, without the closing handshake (a dead
        link, a failed connect); close() may still finish the hang-up."""
        if not self.closed:
            self.closed = True
            self.close_code = code
            self.close_reason = reason
        self._closed_ev.set()
        w, self._writer = self._writer, None
        if w is not None:
            self._closing = w  # close() finishes the hang-up
            try:
                w.close()
            except Exception:
                pass
