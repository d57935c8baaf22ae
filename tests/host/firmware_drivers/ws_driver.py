# Drives firmware/lib/ws.py through one scenario against a live server and
# prints one JSON event per line ("EV {...}"). Runs unchanged under the
# MicroPython unix port and CPython, so both interpreters are held to the
# same wire behaviour.
#
#   ws_driver.py SCENARIO URL
import sys
import json

import asyncio
import ws


def ev(**kw):
    print("EV " + json.dumps(kw))


def show(kind, data):
    if kind == ws.TEXT:
        ev(kind="text", data=data)
    elif kind == ws.BINARY:
        b = bytes(data)
        ev(kind="binary", n=len(b), ok=b == _pattern(len(b)))
    else:
        ev(kind="close", code=data[0], reason=data[1])


def _pattern(n):
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


HEADERS = {"Authorization": "Bearer tok123", "Protocol-Version": "1",
           "Device-Id": "aa:bb:cc:dd:ee:ff", "Client-Id": "uuid-1"}


def tls_context(ca_der_path):
    """A client context trusting only the test CA (DER file)."""
    import ssl
    with open(ca_der_path, "rb") as f:
        der = f.read()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=der)
    return ctx


async def run(scenario, url, ca=None):
    max_size = 1024 if scenario == "too_big" else 131072
    timeout = 300 if scenario == "timeout" else 5000
    ctx = tls_context(ca) if ca else None
    try:
        conn = await ws.connect(url + "/" + scenario, HEADERS, timeout_ms=timeout,
                                max_size=max_size, ssl_context=ctx,
                                server_hostname="localhost" if ca else None)
    except ws.HandshakeError as e:
        ev(kind="handshake_error", status=e.status, message=str(e))
        return
    ev(kind="open")
    try:
        if scenario == "echo":
            show(*await conn.recv())  # the headers the server saw
            await conn.send_text("héllo")
            show(*await conn.recv())
            for n in (5, 300, 70000):
                await conn.send_binary(_pattern(n))
                show(*await conn.recv())
            await conn.close(1000, "done")
        elif scenario == "tls":
            await conn.send_text("over tls")
            show(*await conn.recv())
            await conn.close()
        elif scenario == "fragmented":
            show(*await conn.recv())
            show(*await conn.recv())
            await conn.close()
        elif scenario == "ping":
            await conn.ping(b"hi")
            show(*await conn.recv())
            await conn.close()
        elif scenario in ("server_close", "drop"):
            show(*await conn.recv())
            show(*await conn.recv())
            try:
                await conn.send_text("late")
                ev(kind="sent_after_close")
            except ws.ConnectionClosed:
                ev(kind="send_refused")
        else:  # servers that misbehave: garbage frames, too big
            while True:
                show(*await conn.recv())
    except ws.ProtocolError as e:
        ev(kind="protocol_error", code=e.code, message=str(e),
           big=isinstance(e, ws.MessageTooBig))
    ev(kind="end", closed=conn.closed, code=conn.close_code)
    try:
        await conn.recv()
        ev(kind="recv_after_close")
    except ws.ConnectionClosed:
        ev(kind="recv_refused")


asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
