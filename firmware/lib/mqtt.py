# An asyncio MQTT 3.1.1 client for MicroPython and CPython.
#
#   c = MQTTClient("127.0.0.1", 1883, "dev-aa:bb", on_message=fn, keepalive=30)
#   c.subscribe("snlp/v1/aa:bb/cmd/ctl", qos=1)   # remembered, re-sent on reconnect
#   asyncio.create_task(c.run())                   # connect, serve, reconnect
#   ok = await c.publish(topic, b"...", qos=1)     # True once PUBACKed
#
# on_message(topic_str, payload_mv) is called on the reading task; the
# payload is a memoryview into the receive buffer, valid only during the
# call. An incoming QoS 1 PUBLISH is PUBACKed after the callback returned.
#
# Clean session: the broker keeps nothing, so every (re)connect sends the
# subscriptions again. Keepalive: PINGREQ when nothing was sent for half
# the keepalive; no packet from the broker for 1.5 keepalives drops the
# link. A lost link is retried with exponential backoff (1 s .. 30 s, with
# jitter: lib/backoff.py, the schedule the server's control link uses too).
# The backoff starts again from its first step only after a link that held
# for STABLE_MS: a broker that accepts and drops us at once (another board
# with our client id takes the session) sees ever rarer CONNECTs, not a
# storm every second.
#
# Limits: an incoming packet larger than `max_packet` (default 16 KB + the
# headers) is read and thrown away in chunks (on_oversize(topic_or_None,
# size, head) tells the app, head being the payload's first bytes, valid
# during the call; a QoS 1 one is still PUBACKed), so a 64 KB payload costs
# no memory; topics up to 128 bytes; client id, user and password up to 64
# bytes. The packet encoders write into one preallocated send buffer of
# `send_buf` bytes; a publish bigger than it is not sent (publish() says
# False).
#
# TLS (mqtts://): with `secure` the link is TLS, checked against the board's
# CA bundle (lib/trust.py), with `host` as the name the certificate must
# carry. A refused certificate is logged with its reason, told to
# on_refused(reason), and retried on the backoff like any lost link: never
# in plain; a board with a CA bundle refuses plain mqtt:// too, unless
# config.json says tls.allow_plain (lib/trust.py).
import asyncio
import sys

from backoff import Backoff

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

CONNECT = const(0x10)
CONNACK = const(0x20)
PUBLISH = const(0x30)
PUBACK = const(0x40)
SUBSCRIBE = const(0x82)
SUBACK = const(0x90)
PINGREQ = const(0xC0)
PINGRESP = const(0xD0)
DISCONNECT = const(0xE0)

MAX_PACKET = const(16384 + 256)
SEND_BUF = const(4096)
TOPIC_MAX = const(128)
_CHUNK = const(512)
ACK_TIMEOUT_MS = const(5000)
STABLE_MS = const(30000)   # a link that held this long was not taken from us at once


class MQTTError(Exception):
    pass


# ---- packet encoding (pure; tested on both interpreters) ----

def put_varlen(buf, i, n):
    """Write the remaining-length varint at buf[i]; the new index."""
    while True:
        b = n & 0x7F
        n >>= 7
        buf[i] = b | 0x80 if n else b
        i += 1
        if not n:
            return i


def varlen_size(n):
    s = 1
    while n > 127:
        n >>= 7
        s += 1
    return s


def _put_str(buf, i, s):
    if isinstance(s, str):
        s = s.encode()
    n = len(s)
    buf[i] = n >> 8
    buf[i + 1] = n & 0xFF
    buf[i + 2:i + 2 + n] = s
    return i + 2 + n


def _strlen(s):
    return 2 + len(s.encode() if isinstance(s, str) else s)


def _begin(buf, first, body):
    if 1 + varlen_size(body) + body > len(buf):
        raise ValueError("packet of %d bytes does not fit the %d byte buffer" % (body, len(buf)))
    buf[0] = first
    return put_varlen(buf, 1, body)


def encode_connect(buf, client_id, keepalive_s, user=None, password=None):
    flags = 0x02  # clean session
    body = 10 + _strlen(client_id)
    if user:
        flags |= 0x80
        body += _strlen(user)
        if password:
            flags |= 0x40
            body += _strlen(password)
    i = _begin(buf, CONNECT, body)
    i = _put_str(buf, i, "MQTT")
    buf[i] = 4  # protocol level 3.1.1
    buf[i + 1] = flags
    buf[i + 2] = keepalive_s >> 8
    buf[i + 3] = keepalive_s & 0xFF
    i = _put_str(buf, i + 4, client_id)
    if user:
        i = _put_str(buf, i, user)
        if password:
            i = _put_str(buf, i, password)
    return i


def encode_publish(buf, topic, payload, qos=0, pid=0, dup=False):
    body = _strlen(topic) + (2 if qos else 0) + len(payload)
    i = _begin(buf, PUBLISH | (qos << 1) | (0x08 if dup else 0), body)
    i = _put_str(buf, i, topic)
    if qos:
        buf[i] = pid >> 8
        buf[i + 1] = pid & 0xFF
        i += 2
    buf[i:i + len(payload)] = payload
    return i + len(payload)


def encode_subscribe(buf, pid, topic, qos=1):
    i = _begin(buf, SUBSCRIBE, 2 + _strlen(topic) + 1)
    buf[i] = pid >> 8
    buf[i + 1] = pid & 0xFF
    i = _put_str(buf, i + 2, topic)
    buf[i] = qos
    return i + 1


def _encode_bare(buf, first):
    # PINGREQ, DISCONNECT: a fixed header and nothing else.
    buf[0] = first
    buf[1] = 0
    return 2


def encode_puback(buf, pid):
    buf[0] = PUBACK
    buf[1] = 2
    buf[2] = pid >> 8
    buf[3] = pid & 0xFF
    return 4


def parse_publish(first, body):
    """(topic bytes view, pid, payload view) of a PUBLISH body (memoryview)."""
    tlen = (body[0] << 8) | body[1]
    if tlen > TOPIC_MAX or 2 + tlen > len(body):
        raise MQTTError("bad PUBLISH topic length %d" % tlen)
    i = 2 + tlen
    qos = (first >> 1) & 3
    pid = 0
    if qos:
        if i + 2 > len(body):
            raise MQTTError("PUBLISH too short for its packet id")
        pid = (body[i] << 8) | body[i + 1]
        i += 2
    return body[2:2 + tlen], qos, pid, body[i:]


# ---- the client ----

class MQTTClient:
    def __init__(self, host, port, client_id, on_message=None, keepalive=60, user=None,
                 password=None, max_packet=MAX_PACKET, on_oversize=None, on_connect=None,
                 send_buf=SEND_BUF, retry_ms=(1000, 30000), secure=False, on_refused=None):
        self.host = host
        self.secure = secure
        self.on_refused = on_refused      # fn(reason): the broker's certificate was refused
        self.port = port
        self.client_id = client_id
        self.keepalive = keepalive
        self.user = user
        self.password = password
        self.on_message = on_message
        self.on_oversize = on_oversize
        self.on_connect = on_connect      # async fn() after every (re)connect
        self.subs = []                    # (topic, qos), re-sent after every connect
        self._tx = bytearray(send_buf)
        self._tx_mv = memoryview(self._tx)
        self._rx = bytearray(max_packet)
        self._rx_mv = memoryview(self._rx)
        self._small = bytearray(4)
        self._small_mv = memoryview(self._small)
        self._r = None
        self._w = None
        self._lock = asyncio.Lock()
        self._pid = 0
        self._acks = {}                   # pid -> asyncio.Event for PUBACK / SUBACK
        self._last_tx = 0
        self._last_rx = 0
        self.connected = False
        self.connects = 0                 # successful connects so far (tests, logs)
        self.retry = Backoff(retry_ms[0], retry_ms[1])
        self.retry_delay_ms = 0           # the last wait before a reconnect (tests, logs)
        self._stop = False

    def subscribe(self, topic, qos=1):
        self.subs.append((topic, qos))

    def _next_pid(self):
        self._pid = self._pid % 65535 + 1
        return self._pid

    async def _send(self, encode, *args):
        # Encoded into the one send buffer under the lock: a task that waits
        # for the lock must not have its bytes overwritten by the next one
        # (concurrent acks under a burst of requests did exactly that).
        async with self._lock:
            n = encode(self._tx, *args)
            self._w.write(self._tx_mv[:n])
            await self._w.drain()
            self._last_tx = _now_ms()

    async def _read_exact(self, mv, n):
        # MicroPython streams read straight into our buffer; CPython's
        # cannot, so there the bytes are copied once.
        if hasattr(self._r, "readinto"):
            got = 0
            while got < n:
                k = await self._r.readinto(mv[got:n])
                if not k:
                    raise MQTTError("connection closed")
                got += k
            return
        data = await self._r.readexactly(n)
        mv[:n] = data

    async def _read_packet(self):
        """(first byte, body length); the body is in self._rx unless oversize."""
        b = self._small
        await self._read_exact(self._small_mv, 1)
        first = b[0]
        n = 0
        shift = 0
        while True:
            await self._read_exact(self._small_mv[1:2], 1)
            n |= (b[1] & 0x7F) << shift
            if not b[1] & 0x80:
                break
            shift += 7
            if shift > 21:
                raise MQTTError("bad remaining length")
        self._last_rx = _now_ms()
        if n > len(self._rx):
            await self._discard(first, n)
            return first, -1
        await self._read_exact(self._rx_mv, n)
        return first, n

    async def _discard(self, first, n):
        # Keep the topic (if it is a PUBLISH) so the app can answer, then
        # drop the rest without ever holding the whole packet.
        # The first chunk stays at the start of the receive buffer (later
        # chunks land behind it), so the app sees the payload's head.
        topic = None
        pid = 0
        head = 0
        k = min(n, _CHUNK)
        await self._read_exact(self._rx_mv, k)
        if first & 0xF0 == PUBLISH and k >= 2:
            tlen = (self._rx[0] << 8) | self._rx[1]
            head = 2 + tlen + (2 if first & 0x06 else 0)
            if tlen <= TOPIC_MAX and head <= k:
                topic = bytes(self._rx_mv[2:2 + tlen]).decode()
                if first & 0x06:
                    pid = (self._rx[head - 2] << 8) | self._rx[head - 1]
            else:
                head = 0
        keep = k
        scratch = self._rx_mv[keep:]
        left = n - k
        while left:
            k = min(left, len(scratch), _CHUNK)
            await self._read_exact(scratch, k)
            left -= k
        if self.on_oversize is not None:
            try:
                self.on_oversize(topic, n, self._rx_mv[head:keep] if head else self._rx_mv[:0])
            except Exception as e:  # the app's trouble must not kill the link
                print("mqtt: on_oversize failed: %r" % (e,))
        if pid:
            await self._puback(pid)

    async def connect(self):
        if self.secure:
            import trust    # only with TLS: a plain board never loads it
            self._r, self._w = await asyncio.open_connection(self.host, self.port, ssl=trust.context(),
                                                             server_hostname=self.host)
        else:
            trust = sys.modules.get("trust")     # loaded only on a board with a CA bundle
            if trust is not None:
                trust.plain("mqtt", self.host, self.port)
            self._r, self._w = await asyncio.open_connection(self.host, self.port)
        await self._send(encode_connect, self.client_id, self.keepalive, self.user, self.password)
        first, n = await _with_timeout(self._read_packet(), ACK_TIMEOUT_MS)
        if first != CONNACK or n != 2:
            raise MQTTError("expected CONNACK, got 0x%02x" % first)
        if self._rx[1] != 0:
            raise MQTTError("broker refused the connection (code %d)" % self._rx[1])
        for topic, qos in self.subs:
            await self._send(encode_subscribe, self._next_pid(), topic, qos)
            first, n = await _with_timeout(self._read_packet(), ACK_TIMEOUT_MS)
            if first != SUBACK or n < 3 or self._rx[2] == 0x80:
                raise MQTTError("subscription to %s refused" % topic)
        # Only now: a publish while the SUBACKs are read would have its PUBACK taken for one.
        self.connected = True
        self.connects += 1

    async def publish(self, topic, payload, qos=0):
        """Send; with qos 1 wait for the PUBACK. False when not delivered."""
        if not self.connected:
            return False
        pid = self._next_pid() if qos else 0
        ev = None
        if qos:
            ev = asyncio.Event()
            self._acks[pid] = ev
        try:
            try:
                await self._send(encode_publish, topic, payload, qos, pid)
            except ValueError as e:
                print("mqtt: publish to %s not sent: %s" % (topic, e))
                return False
            if ev is None:
                return True
            try:
                await _with_timeout(ev.wait(), ACK_TIMEOUT_MS)
                return True
            except asyncio.TimeoutError:
                return False
        except OSError:
            return False
        finally:
            if qos:
                self._acks.pop(pid, None)

    async def _serve(self):
        pinger = asyncio.create_task(self._ping_loop())
        try:
            while True:
                first, n = await self._read_packet()
                kind = first & 0xF0
                if n < 0:
                    continue
                if kind == PUBLISH:
                    await self._on_publish(first, n)
                elif kind == PUBACK and n >= 2:
                    ev = self._acks.get((self._rx[0] << 8) | self._rx[1])
                    if ev is not None:
                        ev.set()
                # PINGRESP and the rest only prove the link is alive.
        finally:
            pinger.cancel()

    async def _on_publish(self, first, n):
        topic, qos, pid, payload = parse_publish(first, self._rx_mv[:n])
        if self.on_message is not None:
            try:
                r = self.on_message(bytes(topic).decode(), payload)
                if r is not None and hasattr(r, "send"):
                    await r
            except Exception as e:  # a bad message must never end the link
                print("mqtt: on_message failed: %r" % (e,))
        if qos == 1:
            await self._puback(pid)

    async def _puback(self, pid):
        async with self._lock:
            k = encode_puback(self._small, pid)
            self._w.write(self._small[:k])
            await self._w.drain()
            self._last_tx = _now_ms()

    async def _ping_loop(self):
        ka = self.keepalive * 1000
        while True:
            await asyncio.sleep(ka / 4000)
            now = _now_ms()
            if _diff(now, self._last_rx) > ka * 3 // 2:
                self._close()  # the broker went silent: the read fails, run() reconnects
                return
            if _diff(now, self._last_tx) >= ka // 2:
                await self._send(_encode_bare, PINGREQ)

    def _close(self):
        self.connected = False
        w, self._w = self._w, None
        if w is not None:
            try:
                w.close()
            except Exception:
                pass
        for ev in self._acks.values():
            ev.set()

    async def run(self):
        """Connect and serve forever, reconnecting with backoff."""
        while not self._stop:
            up = None
            try:
                await self.connect()
                up = _now_ms()
                if self.on_connect is not None:
                    asyncio.create_task(self.on_connect())
                await self._serve()
            except (OSError, MQTTError, asyncio.TimeoutError, EOFError, ValueError) as e:
                why = None
                if self.secure and up is None:
                    import trust
                    why = trust.refusal(e)
                if why:
                    print("mqtt: server certificate of %s:%d refused: %s" % (self.host, self.port, why))
                    if self.on_refused is not None:
                        self.on_refused(why)
                else:
                    print("mqtt: link to %s:%d lost: %r" % (self.host, self.port, e))
            except Exception as e:  # IncompleteReadError and friends on CPython
                print("mqtt: link to %s:%d ended: %r" % (self.host, self.port, e))
            self._close()
            if self._stop:
                return
            if up is not None and _diff(_now_ms(), up) >= STABLE_MS:
                self.retry.reset()
            self.retry_delay_ms = self.retry.next_ms()
            print("mqtt: retrying in %d ms" % self.retry_delay_ms)
            await asyncio.sleep(self.retry_delay_ms / 1000)

    async def disconnect(self):
        self._stop = True
        if self.connected and self._w is not None:
            try:
                await self._send(_encode_bare, DISCONNECT)
            except OSError:
                pass
        self._close()


try:
    import time as _time
    _ticks = _time.ticks_ms
    _tdiff = _time.ticks_diff
except AttributeError:  # CPython
    import time as _time

    def _ticks():
        return int(_time.monotonic() * 1000)

    def _tdiff(a, b):
        return a - b


def _now_ms():
    return _ticks()


def _diff(a, b):
    return _tdiff(a, b)


async def _with_timeout(aw, ms):
    return await asyncio.wait_for(aw, ms / 1000)
