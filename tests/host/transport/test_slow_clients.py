"""Slow clients cannot hold the server: a request that never finishes its
headers or body is closed, too many waiting connections close the oldest,
and meanwhile /health and a new voice session are served (issue 12, item 1,
at a small scale; `make bench ARGS=edge` runs it with 5 000 connections)."""
import asyncio
import logging

import aiohttp

from testkit.wire_device import WireDevice

from edge_clients import HOST, close_all, closed_by_server, edge_config, open_slow


async def health(port):
    async with aiohttp.ClientSession() as s:
        async with s.get("http://%s:%d/health" % (HOST, port)) as r:
            return r.status, await r.json()


async def voice_session_answers(server):
    async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:00:42", mcp=False) as dev:
        hello = await dev.hello(timeout=30)
        return hello["session_id"]


async def test_waiting_connections_past_the_cap_close_the_oldest_and_health_still_answers(start_server):
    server = await start_server(edge_config(http_max_pending=20, http_max_connections=60,
                                            http_header_timeout_s=600))
    guard = server.http.guard
    conns = [await open_slow(server.http.port) for _ in range(100)]
    await guard.until(lambda g: g.stats.admitted >= 100)
    # The 80 oldest were closed to make room; the newest 20 still wait.
    for reader, _w in conns[:80]:
        assert await closed_by_server(reader) == b""
    assert guard.pending_count == 20 and guard.stats.evicted == 80
    assert guard.open_count <= 60
    status, body = await health(server.http.port)
    assert status == 200 and body["status"] == "ok"
    assert await voice_session_answers(server)
    close_all(conns)


async def test_headers_sent_a_byte_at_a_time_are_closed_at_the_header_timeout(start_server):
    server = await start_server(edge_config(http_header_timeout_s=0.5))
    conns = [await open_slow(server.http.port, b"G") for _ in range(5)]

    async def trickle(writer):
        for ch in b"ET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10000:
            writer.write(bytes([ch]))
            await asyncio.sleep(0.05)
    tricklers = [asyncio.create_task(trickle(w)) for _r, w in conns]
    for reader, _w in conns:
        assert await closed_by_server(reader) == b""      # no answer, just closed
    for t in tricklers:
        t.cancel()
    await server.http.guard.until(lambda g: g.open_count == 0)
    assert (await health(server.http.port))[0] == 200
    close_all(conns)


async def test_a_body_that_never_finishes_gets_408_and_is_closed(start_server):
    server = await start_server(edge_config(http_body_timeout_s=0.5))
    reader, writer = await open_slow(server.http.port, b"POST /xiaozhi/ota/ HTTP/1.1\r\nHost: x\r\n"
                                     b"Device-Id: aa:bb:cc:00:00:01\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 100\r\n\r\n{\"applica")
    answer = await closed_by_server(reader)
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.5 s" in answer
    writer.close()


async def test_a_declared_body_over_the_limit_is_refused_at_once(start_server):
    server = await start_server(edge_config(http_body_timeout_s=600))
    reader, writer = await open_slow(server.http.port, b"POST /xiaozhi/ota/ HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Length: 10000000\r\n\r\n")
    answer = await closed_by_server(reader)
    assert answer.startswith(b"HTTP/1.1 413") and b"65536 byte limit" in answer
    writer.close()


async def test_past_the_connection_cap_new_connections_are_refused(start_server):
    # Five requests held in their handlers (bodies that never end) fill a cap of five.
    server = await start_server(edge_config(http_max_connections=5, http_max_pending=2,
                                            http_body_timeout_s=600))
    guard = server.http.guard
    busy = [await open_slow(server.http.port, b"POST /xiaozhi/ota/ HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 50\r\n\r\n{") for _ in range(5)]
    await guard.until(lambda g: g.open_count == 5 and g.pending_count == 0)
    reader, writer = await open_slow(server.http.port)
    assert await closed_by_server(reader) == b""
    assert guard.stats.refused == 1 and guard.open_count == 5
    writer.close()
    close_all(busy)


async def test_slow_websocket_handshakes_and_silent_sockets_are_closed_and_devices_still_connect(start_server):
    server = await start_server(edge_config(ws_max_pending=10, ws_handshake_timeout_s=0.5))
    guard = server.ws.guard
    partial = b"GET /xiaozhi/v1/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
    conns = [await open_slow(server.ws.port, partial) for _ in range(30)]
    await guard.until(lambda g: g.stats.admitted >= 30)
    for reader, _w in conns:          # 20 evicted at once, the rest at the handshake timeout
        assert await closed_by_server(reader) == b""
    assert guard.stats.evicted >= 20
    assert await voice_session_answers(server)
    close_all(conns)


async def test_a_flood_of_slow_connections_writes_a_few_log_lines_and_one_summary(start_server, caplog):
    caplog.set_level(logging.INFO)
    summary = asyncio.Event()

    class Watch(logging.Handler):
        def emit(self, record):
            if "not logged one by one" in record.getMessage():
                summary.set()
    watch = Watch()
    logging.getLogger("xiaozhi_server.transport.guard").addHandler(watch)
    try:
        server = await start_server(edge_config(http_max_pending=5, http_header_timeout_s=600,
                                                log_interval_s=0.5))
        conns = [await open_slow(server.http.port) for _ in range(200)]
        await server.http.guard.until(lambda g: g.stats.evicted >= 195)
        await asyncio.wait_for(summary.wait(), 30)
    finally:
        logging.getLogger("xiaozhi_server.transport.guard").removeHandler(watch)
    lines = [r.getMessage() for r in caplog.records if r.name == "xiaozhi_server.transport.guard"]
    assert len(lines) <= 8, lines         # 195 evictions: 3 lines, then summaries
    assert any("more like it within 0.5 s" in line for line in lines)
    close_all(conns)
