"""firmware/lib/ws.py against a real `websockets` server, run as a
subprocess under the MicroPython unix port and under CPython."""
import asyncio
import json
import ssl
import subprocess
import sys

import pytest
from websockets.asyncio.server import serve

from testkit import ROOT, firmware_env, tool

DRIVER = str(ROOT / "tests/host/firmware_drivers/ws_driver.py")
INTERPRETERS = ["micropython", "cpython"]


def _cmd(interp):
    if interp == "micropython":
        return [tool("micropython"), "-X", "heapsize=2M"]
    return [sys.executable]


def _pattern(n):
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


class Server:
    """Scripted server: the URL path names the scenario."""

    def __init__(self):
        self.close_codes = {}
        self.headers = {}

    async def process_request(self, conn, request):
        if request.path == "/refuse":
            return conn.respond(401, "bad token\n")
        return None

    async def handler(self, conn):
        scen = conn.request.path.strip("/")
        t = conn.transport
        if scen == "echo":
            await conn.send(json.dumps({k: conn.request.headers.get(k) for k in (
                "Authorization", "Protocol-Version", "Device-Id", "Client-Id")}))
            async for msg in conn:
                await conn.send(msg)
        elif scen == "tls":
            await conn.send(await conn.recv())
        elif scen == "fragmented":
            await conn.send(["frag", "men", "ted"])
            p = _pattern(3000)
            await conn.send([p[:1000], p[1000:2999], p[2999:]])
        elif scen == "ping":
            waiter = await conn.ping(b"srv")
            await asyncio.wait_for(waiter, 3)  # the client must answer
            await conn.send("pong ok")
        elif scen == "server_close":
            await conn.send("bye soon")
            await conn.close(4001, "going away")
        elif scen == "drop":
            await conn.send("bye soon")
            t.abort()
        elif scen == "bad_opcode":
            t.write(b"\x83\x00")  # opcode 3 is reserved
        elif scen == "bad_rsv":
            t.write(b"\xc1\x02hi")  # RSV1 without a negotiated extension
        elif scen == "masked":
            t.write(b"\x81\x82\x01\x02\x03\x04" + bytes((ord("h") ^ 1, ord("i") ^ 2)))
        elif scen == "bad_utf8":
            t.write(b"\x81\x02\xff\xfe")
        elif scen == "stray_cont":
            t.write(b"\x80\x02hi")
        elif scen == "too_big":
            await conn.send(bytes(2000))
        await conn.wait_closed()
        self.close_codes[scen] = conn.close_code


@pytest.fixture
async def server():
    srv = Server()
    async with serve(srv.handler, "127.0.0.1", 0, process_request=srv.process_request,
                     max_size=2 ** 20) as s:
        port = s.sockets[0].getsockname()[1]
        srv.url = "ws://127.0.0.1:%d" % port
        yield srv


async def drive(interp, scenario, url, *extra):
    p = await asyncio.create_subprocess_exec(
        *_cmd(interp), DRIVER, scenario, url, *extra, cwd=str(ROOT),
        env=firmware_env({"MICROPYPATH": "firmware/lib:firmware:.frozen"}),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), 30)
    out, err = out.decode(), err.decode()
    assert p.returncode == 0, out + err
    return [json.loads(l[3:]) for l in out.splitlines() if l.startswith("EV ")]


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_echo_with_headers_text_and_binary_sizes(server, interp):
    evs = await drive(interp, "echo", server.url)
    assert evs[0] == {"kind": "open"}
    seen = json.loads(evs[1]["data"])
    assert seen == {"Authorization": "Bearer tok123", "Protocol-Version": "1",
                    "Device-Id": "aa:bb:cc:dd:ee:ff", "Client-Id": "uuid-1"}
    assert evs[2] == {"kind": "text", "data": "héllo"}
    # 5, 300 and 70000 bytes: the 7-bit, 16-bit and 64-bit length forms
    assert evs[3:6] == [{"kind": "binary", "n": n, "ok": True} for n in (5, 300, 70000)]
    assert evs[6] == {"kind": "end", "closed": True, "code": 1000}
    assert evs[7] == {"kind": "recv_refused"}
    await asyncio.sleep(0.05)
    assert server.close_codes["echo"] == 1000


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_fragmented_messages_are_reassembled(server, interp):
    evs = await drive(interp, "fragmented", server.url)
    assert evs[1] == {"kind": "text", "data": "fragmented"}
    assert evs[2] == {"kind": "binary", "n": 3000, "ok": True}


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_server_ping_gets_a_pong(server, interp):
    evs = await drive(interp, "ping", server.url)
    # The server sends "pong ok" only after its ping was answered.
    assert evs[1] == {"kind": "text", "data": "pong ok"}
    assert evs[2]["closed"] is True


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_server_close_mid_stream(server, interp):
    evs = await drive(interp, "server_close", server.url)
    assert evs[1] == {"kind": "text", "data": "bye soon"}
    assert evs[2] == {"kind": "close", "code": 4001, "reason": "going away"}
    assert evs[3] == {"kind": "send_refused"}
    assert evs[4] == {"kind": "end", "closed": True, "code": 4001}
    await asyncio.sleep(0.05)
    assert server.close_codes["server_close"] == 4001  # our reply echoed the code


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_connection_dropped_without_close_frame(server, interp):
    evs = await drive(interp, "drop", server.url)
    assert evs[2] == {"kind": "close", "code": 1006, "reason": "connection lost"}
    assert evs[3] == {"kind": "send_refused"}


@pytest.mark.parametrize("interp", INTERPRETERS)
@pytest.mark.parametrize("scenario,code", [
    ("bad_opcode", 1002), ("bad_rsv", 1002), ("masked", 1002),
    ("stray_cont", 1002), ("bad_utf8", 1007)])
async def test_garbage_frame_fails_cleanly(server, interp, scenario, code):
    evs = await drive(interp, scenario, server.url)
    err = [e for e in evs if e["kind"] == "protocol_error"]
    assert len(err) == 1 and err[0]["code"] == code, evs
    assert evs[-2] == {"kind": "end", "closed": True, "code": code}
    assert evs[-1] == {"kind": "recv_refused"}
    await asyncio.sleep(0.05)
    assert server.close_codes[scenario] == code  # the server was told why


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_oversized_message_refused(server, interp):
    evs = await drive(interp, "too_big", server.url)
    err = [e for e in evs if e["kind"] == "protocol_error"]
    assert err and err[0]["code"] == 1009 and err[0]["big"] is True, evs
    assert not [e for e in evs if e["kind"] == "binary"]
    await asyncio.sleep(0.05)
    assert server.close_codes["too_big"] == 1009


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_handshake_refused_401(server, interp):
    evs = await drive(interp, "refuse", server.url)
    assert evs[0]["kind"] == "handshake_error" and evs[0]["status"] == 401, evs
    assert "401" in evs[0]["message"]


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_handshake_timeout(interp):
    async def silent(reader, writer):  # accepts TCP, never answers HTTP
        await reader.read(10000)
        await asyncio.sleep(5)
    srv = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        evs = await drive(interp, "timeout", "ws://127.0.0.1:%d" % port)
    finally:
        srv.close()
    assert evs[0]["kind"] == "handshake_error" and evs[0]["status"] == 0
    assert "timed out after 300 ms" in evs[0]["message"]


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_connection_refused_is_a_handshake_error(interp):
    evs = await drive(interp, "echo", "ws://127.0.0.1:9")
    assert evs[0]["kind"] == "handshake_error" and "cannot connect" in evs[0]["message"], evs


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A self-signed certificate for localhost / 127.0.0.1 (PEM + DER)."""
    d = tmp_path_factory.mktemp("tls")
    key, pem, der = d / "key.pem", d / "cert.pem", d / "cert.der"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(key), "-out", str(pem), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-in", str(pem), "-outform", "DER", "-out", str(der)],
                   check=True, capture_output=True)
    return key, pem, der


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_wss_with_a_verified_certificate(interp, tls_files):
    key, pem, der = tls_files
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pem), str(key))
    srv = Server()
    async with serve(srv.handler, "127.0.0.1", 0, ssl=ctx) as s:
        port = s.sockets[0].getsockname()[1]
        evs = await drive(interp, "tls", "wss://127.0.0.1:%d" % port, str(der))
    assert evs[:2] == [{"kind": "open"}, {"kind": "text", "data": "over tls"}], evs
    assert evs[2]["closed"] is True


@pytest.mark.parametrize("interp", INTERPRETERS)
async def test_wss_refuses_an_untrusted_certificate(interp, tls_files, tmp_path):
    key, pem, der = tls_files
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(tmp_path / "k2.pem"), "-out", str(other), "-days", "2",
                    "-subj", "/CN=localhost"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(other), str(tmp_path / "k2.pem"))
    srv = Server()
    async with serve(srv.handler, "127.0.0.1", 0, ssl=ctx) as s:
        port = s.sockets[0].getsockname()[1]
        evs = await drive(interp, "tls", "wss://127.0.0.1:%d" % port, str(der))
    assert evs[0]["kind"] == "handshake_error", evs
