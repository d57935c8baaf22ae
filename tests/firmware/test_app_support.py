# Host MP3 timing, the HTTP client, config loading and reconnect backoff.
import json

import asyncio

import t
from hal.host.clock import HostClock
import http_client as http
from app.boot import config
from app.player.mp3_backend import ClockMp3
from backoff import Backoff
from mp3info import mp3_duration_ms

MP3 = "tests/firmware/data/cbr_1500ms_notag.mp3"


async def _settle():
    for _ in range(5):
        await asyncio.sleep(0)


async def test_app_clock_mp3_plays_the_file_duration_and_keeps_position_over_pause():
    # Warps move simulated time exactly; only a few real ms slip in between.
    clock = HostClock(speed=1)
    mp3 = ClockMp3(clock)
    ends = []
    mp3.on_end = lambda: ends.append(clock.ticks_ms())
    dur = mp3_duration_ms(MP3)
    t.true(1400 <= dur <= 1700, "fixture is about 1.5 s, got %d" % dur)
    mp3.play(MP3)
    await _settle()
    clock.warp(0.5)
    await _settle()
    mp3.pause()
    left = mp3.position_left_ms()
    t.true(dur - 560 <= left <= dur - 500, "%d ms left after 0.5 s of %d, got %d" % (dur - 500, dur, left))
    clock.warp(3)
    await _settle()
    t.eq(ends, [], "no end while paused")
    mp3.resume()
    await _settle()
    clock.warp((left - 100) / 1000)
    await _settle()
    t.eq(ends, [], "not yet: 100 ms of the pass left")
    clock.warp(0.2)
    await _settle()
    t.eq(len(ends), 1)


async def test_app_clock_mp3_stop_never_reports_an_end():
    clock = HostClock(speed=1)
    mp3 = ClockMp3(clock)
    ends = []
    mp3.on_end = lambda: ends.append(1)
    mp3.play(MP3)
    await _settle()
    clock.warp(0.2)
    await _settle()
    mp3.stop()
    clock.warp(3)
    await _settle()
    t.eq(ends, [])


async def _serve(answer):
    seen = []

    async def handle(reader, writer):
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += await reader.read(1)
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        body = await reader.readexactly(n) if n else b""
        seen.append((head.decode(), body))
        writer.write(answer)
        await writer.drain()
        writer.close()
        await writer.wait_closed()
    srv, port = await t.serve(handle)
    return srv, seen, "http://127.0.0.1:%d" % port


async def test_app_http_post_with_content_length_and_chunked_answers():
    srv, seen, url = await _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
    try:
        st, body = await http.request("POST", url + "/xiaozhi/ota/",
                                      {"Device-Id": "aa:bb"}, '{"a":1}', 3000)
    finally:
        srv.close()
        await srv.wait_closed()
    t.eq((st, json.loads(body)), (200, {"ok": True}))
    head, sent = seen[0]
    t.true(head.startswith("POST /xiaozhi/ota/ HTTP/1.1\r\n"), head)
    t.true("Device-Id: aa:bb\r\n" in head, "header sent")
    t.eq(sent, b'{"a":1}')
    srv, seen, url = await _serve(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"4\r\nnope\r\n3\r\n!!!\r\n0\r\n\r\n")
    try:
        st, body = await http.request("POST", url + "/x", None, b"", 3000)
    finally:
        srv.close()
        await srv.wait_closed()
    t.eq((st, body), (404, b"nope!!!"))


async def test_app_http_refused_connection_is_an_oserror():
    try:
        await http.request("POST", "http://127.0.0.1:1/", None, b"", 2000)
    except OSError:
        return
    raise AssertionError("no error for a refused connection")


def test_app_http_only_plain_http_urls():
    t.raises(ValueError, http.parse_url, "ftp://x/")
    t.eq(http.parse_url("https://x/"), ("x", 443, "/"))
    t.eq(http.parse_url("http://h:81/p?q"), ("h", 81, "/p?q"))
    t.eq(http.parse_url("http://h"), ("h", 80, "/"))


def test_app_config_merges_over_defaults_and_survives_broken_files():
    d = t.tmpdir("cfg")
    with open(d + "/c.json", "w") as f:
        f.write('{"token": "abc", "wifi": {"ssid": "home"}}')
    c = config.load(d + "/c.json")
    t.eq(c["token"], "abc")
    t.eq(c["wifi"]["ssid"], "home")
    t.eq(c["wifi"]["timeout_ms"], config.DEFAULTS["wifi"]["timeout_ms"])
    t.eq(c["server_url"], config.DEFAULTS["server_url"])
    with open(d + "/bad.json", "w") as f:
        f.write("{not json")
    t.eq(config.load(d + "/bad.json"), config.DEFAULTS)
    t.eq(config.load(d + "/missing.json"), config.DEFAULTS)


def test_app_backoff_doubles_to_the_cap_and_resets():
    b = Backoff(1000, 8000)
    got = [b.next_ms() for _ in range(6)]
    for base, ms in zip((1000, 2000, 4000, 8000, 8000, 8000), got):
        t.true(base <= ms <= min(8000, base * 5 // 4), "%d near %d" % (ms, base))
    b.reset()
    t.true(b.next_ms() < 1300, "back to the first delay")
