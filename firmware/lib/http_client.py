# A tiny HTTP/1.1 client on asyncio streams (the unix port has no
# urequests, and the board's must not block the event loop).
#
#   status, body = await request("POST", "http://h:8003/xiaozhi/ota/",
#                                headers, body_bytes, timeout_ms=10000)
#
# One request per connection (Connection: close). Bodies by Content-Length,
# chunked, or up to EOF. https:// is checked against the board's CA bundle
# (lib/trust.py: a refused certificate raises as trust.refusal() reads it,
# never a plain retry). Limits: MAX_BODY bytes of
# response body, MAX_HEADERS bytes of response headers; redirects are not
# followed (the OTA endpoint does not use them).
import sys

import asyncio

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_BODY = const(16384)
MAX_HEADERS = const(4096)
_MP = sys.implementation.name == "micropython"


class HttpError(OSError):
    pass


def parse_url(url):
    """(host, port, path) of an http:// or https:// URL."""
    return _split(url)[1:]


def _split(url):
    # (secure, host, port, path), by the WebSocket client's parser (it
    # knows [v6] hosts): http and https name the same parts as ws and wss.
    if not url.startswith(("http://", "https://")):
        raise ValueError("only http:// and https:// URLs are supported: %s" % url)
    import ws
    try:
        return ws.parse_url("ws" + url[4:])
    except ValueError:
        raise ValueError("no host in URL: %s" % url)


async def _wait(coro, ms):
    if _MP:
        return await asyncio.wait_for_ms(coro, ms)
    return await asyncio.wait_for(coro, ms / 1000)


def _plain(scheme, host, port):
    # lib/trust.py is loaded only on a board with a CA bundle: it decides.
    trust = sys.modules.get("trust")
    if trust is not None:
        trust.plain(scheme, host, port)


async def request(method, url, headers=None, body=b"", timeout_ms=10000):
    try:
        return await _wait(_request(method, url, headers or {}, body), timeout_ms)
    except asyncio.TimeoutError:
        raise HttpError("%s %s: no answer within %d ms" % (method, url, timeout_ms))


async def _request(method, url, headers, body):
    secure, host, port, path = _split(url)
    if isinstance(body, str):
        body = body.encode()
    if secure:
        import trust
        reader, writer = await asyncio.open_connection(host, port, ssl=trust.context(), server_hostname=host)
    else:
        _plain("http", host, port)
        reader, writer = await asyncio.open_connection(host, port)
    try:
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nContent-Length: %d\r\n" % (
            method, path, host, port, len(body))
        for k in headers:
            v = str(headers[k])
            if "\r" in v or "\n" in v or "\r" in k or "\n" in k:
                raise ValueError("bad header %r" % k)
            head += "%s: %s\r\n" % (k, v)
        writer.write((head + "\r\n").encode() + body)
        await writer.drain()
        return await _read_response(reader)
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except Exception:
            pass


async def _read_response(reader):
    line = await reader.readline()
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise HttpError("not an HTTP response: %r" % (line[:40],))
    status = int(parts[1])
    length = None
    chunked = False
    seen = len(line)
    while True:
        line = await reader.readline()
        seen += len(line)
        if seen > MAX_HEADERS:
            raise HttpError("response headers over %d bytes" % MAX_HEADERS)
        if not line:
            raise HttpError("connection closed inside the headers")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        value = value.strip()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        body = await _read_chunked(reader)
    elif length is not None:
        if length > MAX_BODY:
            raise HttpError("response body of %d bytes is over %d" % (length, MAX_BODY))
        body = await reader.readexactly(length) if length else b""
    else:
        body = await _read_to_eof(reader)
    return status, body


async def _read_chunked(reader):
    out = b""
    while True:
        size = int((await reader.readline()).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readline()
            return out
        if len(out) + size > MAX_BODY:
            raise HttpError("response body over %d bytes" % MAX_BODY)
        out += await reader.readexactly(size)
        await reader.readline()


async def _read_to_eof(reader):
    out = b""
    while True:
        data = await reader.read(512)
        if not data:
            return out
        out += data
        if len(out) > MAX_BODY:
            raise HttpError("response body over %d bytes" % MAX_BODY)
