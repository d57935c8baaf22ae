"""The attacker for the `edge` benchmark, in a process of its own (so its
work does not share the server's event loop), on 127.0.0.1 only, bounded
in connections and time.

`run_slow`: keeps `n_http` connections that sent the start of an HTTP
request and never finish it, and `n_ws` that started a WebSocket
handshake and never finish it. Each one the server closes is opened again
at once, as an attacker who wants to keep them all would.

`run_flood`: one device connection (hello, then nothing but `abort`
messages, or binary frames) sending as fast as the socket takes them;
when the server closes it, it connects again and goes on.

Both report "ready" through the pipe once the attack is in place, and
their totals when the parent says stop (or `seconds` have passed).
"""
import asyncio
import json
import time

HOST = "127.0.0.1"
HTTP_START = b"GET /health HTTP/1.1\r\nHost: bench\r\nUser-Agent: slow/1.0\r\n"
WS_START = b"GET /xiaozhi/v1/ HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\n"


class Totals(dict):
    def __init__(self):
        super().__init__(opened=0, open=0, peak_open=0, closed_by_server=0, connect_errors=0,
                         sent=0, flood_closed=0, close_reasons=[])

    def opened_one(self):
        self["opened"] += 1
        self["open"] += 1
        self["peak_open"] = max(self["peak_open"], self["open"])


async def _hold(port, first, totals, stop):
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            totals["connect_errors"] += 1
            await asyncio.sleep(0.1)
            continue
        totals.opened_one()
        try:
            writer.write(first)
            closed = asyncio.ensure_future(reader.read())
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({closed, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if closed.done():
                closed.exception()      # a reset is a close too; retrieved, so not reported
                totals["closed_by_server"] += 1
            else:
                closed.cancel()
        except OSError:
            totals["closed_by_server"] += 1
        finally:
            totals["open"] -= 1
            writer.close()


async def _watch(conn, stop, seconds):
    deadline = time.monotonic() + seconds
    while not conn.poll() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    stop.set()


async def _slow(conn, http_port, ws_port, n_http, n_ws, seconds):
    totals, stop = Totals(), asyncio.Event()
    tasks = [asyncio.create_task(_hold(http_port, HTTP_START, totals, stop)) for _ in range(n_http)]
    tasks += [asyncio.create_task(_hold(ws_port, WS_START, totals, stop)) for _ in range(n_ws)]
    watcher = asyncio.create_task(_watch(conn, stop, seconds))
    while totals["opened"] < n_http + n_ws and not stop.is_set():
        await asyncio.sleep(0.05)
    conn.send("ready")
    await watcher
    await asyncio.gather(*tasks, return_exceptions=True)
    return dict(totals)


async def _flood_once(url, frame, totals, stop, websockets, started):
    async with websockets.connect(url, additional_headers={"Device-Id": "bench:flooder"},
                                  max_size=2 ** 20) as ws:
        await ws.send(json.dumps({"type": "hello", "version": 1, "transport": "websocket", "audio_params": {
            "format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60}}))
        totals.opened_one()
        try:
            while not stop.is_set():
                for _ in range(100):
                    await ws.send(frame)
                    totals["sent"] += 1
                started()
                await asyncio.sleep(0)
        except websockets.ConnectionClosed as e:
            if e.rcvd is not None:
                totals["close_reasons"].append("%d %s" % (e.rcvd.code, e.rcvd.reason))
                totals["flood_closed"] += e.rcvd.code == 1008
        finally:
            totals["open"] -= 1


async def _flood(conn, url, kind, seconds):
    import websockets
    frame = json.dumps({"type": "abort", "reason": "flood"}) if kind == "abort" else b"\xf8\xff\xfe" + bytes(40)
    totals, stop = Totals(), asyncio.Event()
    watcher = asyncio.create_task(_watch(conn, stop, seconds))
    ready = []

    def started():
        if not ready:
            ready.append(True)
            conn.send("ready")
    while not stop.is_set():
        try:
            await _flood_once(url, frame, totals, stop, websockets, started)
        except (OSError, websockets.WebSocketException):
            totals["connect_errors"] += 1
            await asyncio.sleep(0.1)
    started()
    await watcher
    totals["close_reasons"] = sorted(set(totals["close_reasons"]))
    return dict(totals)


def run_slow(conn, http_port, ws_port, n_http, n_ws, seconds):
    conn.send(asyncio.run(_slow(conn, http_port, ws_port, n_http, n_ws, seconds)))


def run_flood(conn, url, kind, seconds):
    conn.send(asyncio.run(_flood(conn, url, kind, seconds)))
