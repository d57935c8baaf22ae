"""A browser client can call OTA (issue 11): the CORS preflight a browser
sends before its POST is answered, the answers carry
Access-Control-Allow-Origin, and a browser's User-Agent is not taken for a
firmware version. The requests are the bytes a Chromium browser sends for
the stock server's web test page (POST with Device-Id, Client-Id and a JSON
Content-Type is not a "simple" request, so a preflight comes first)."""
import json
import logging

import aiohttp

import pytest

from testkit.server import server_config

from edge_clients import HOST, closed_by_server, edge_config, open_slow

BROWSER_UA = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/131.0.0.0 Safari/537.36")
ORIGIN = "http://localhost:8006"


def raw_request(method, path, port, headers, body=b""):
    head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\n" % (method, path, HOST, port)
    head += "".join("%s: %s\r\n" % kv for kv in headers)
    if body:
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode() + b"Connection: close\r\n\r\n" + body


def parse(answer):
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return status, headers, body


async def exchange(port, request):
    reader, writer = await open_slow(port, request)
    answer = await closed_by_server(reader)
    writer.close()
    return parse(answer)


PREFLIGHT = [
    ("Accept", "*/*"),
    ("Access-Control-Request-Method", "POST"),
    ("Access-Control-Request-Headers", "client-id,content-type,device-id"),
    ("Origin", ORIGIN),
    ("User-Agent", BROWSER_UA),
    ("Sec-Fetch-Mode", "cors"),
    ("Sec-Fetch-Site", "same-site"),
    ("Sec-Fetch-Dest", "empty"),
    ("Referer", ORIGIN + "/"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8"),
]


async def test_browser_preflight_for_ota_is_answered_and_allows_the_post(start_server):
    server = await start_server(server_config())
    status, headers, body = await exchange(server.http.port,
                                           raw_request("OPTIONS", "/xiaozhi/ota/", server.http.port, PREFLIGHT))
    assert status == 204 and body == b""
    assert headers["access-control-allow-origin"] == "*"
    assert "POST" in headers["access-control-allow-methods"]
    allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
    assert {"client-id", "content-type", "device-id"} <= allowed


async def test_browser_post_to_ota_gets_its_answer_with_cors_and_no_version_from_the_user_agent(start_server):
    server = await start_server(server_config())
    # The web test page's system info names no firmware version here.
    body = json.dumps({"mac_address": "aa:bb:cc:00:00:10", "uuid": "web-client",
                       "board": {"type": "web", "name": "xiaozhi-web-test"}}).encode()
    status, headers, answer = await exchange(server.http.port, raw_request(
        "POST", "/xiaozhi/ota/", server.http.port,
        [("Origin", ORIGIN), ("User-Agent", BROWSER_UA), ("Content-Type", "application/json"),
         ("Device-Id", "aa:bb:cc:00:00:10"), ("Client-Id", "web-client")], body))
    assert status == 200 and headers["access-control-allow-origin"] == "*"
    ota = json.loads(answer)
    assert ota["firmware"]["version"] == "0.0.0"
    assert ota["websocket"]["url"].endswith("/xiaozhi/v1/")


@pytest.mark.parametrize("agent,version", [
    ("esp-box-3/1.5.6", "1.5.6"),
    ("bread-compact-wifi/1.6.0-beta", "1.6.0-beta"),
    (BROWSER_UA, "0.0.0"),
    ("Mozilla/5.0", "0.0.0"),
    ("curl/8.5.0 extra words", "0.0.0"),
    ("curl/8.5.0", "0.0.0"),                 # curl's own: shaped like a board's, names no firmware
    ("python-requests/2.32.3", "0.0.0"),
    ("board/not-a-version", "0.0.0"),
])
async def test_firmware_version_comes_only_from_a_board_and_version_user_agent(start_server, agent, version):
    server = await start_server(server_config())
    status, _headers, answer = await exchange(server.http.port, raw_request(
        "POST", "/xiaozhi/ota/", server.http.port,
        [("User-Agent", agent), ("Device-Id", "aa:bb:cc:00:00:11"), ("Content-Type", "application/json")], b"{}"))
    assert status == 200 and json.loads(answer)["firmware"]["version"] == version


async def test_health_answers_a_browser_with_cors_and_the_api_gets_no_cors(start_server):
    server = await start_server(server_config())
    status, headers, _ = await exchange(server.http.port, raw_request(
        "GET", "/health", server.http.port, [("Origin", ORIGIN), ("User-Agent", BROWSER_UA)]))
    assert status == 200 and headers["access-control-allow-origin"] == "*"
    status, headers, _ = await exchange(server.http.port, raw_request(
        "OPTIONS", "/api/devices/x", server.http.port, PREFLIGHT))
    assert "access-control-allow-origin" not in headers


async def test_ota_calls_with_a_new_device_id_each_write_only_a_few_lines(start_server, caplog):
    # Anyone may call OTA, with any Device-Id: its log line is summarised per
    # template, so changing the id every time does not bypass the throttle.
    caplog.set_level(logging.INFO)
    server = await start_server(edge_config(log_interval_s=600))
    async with aiohttp.ClientSession() as http:
        for i in range(150):
            async with http.post("http://%s:%d/xiaozhi/ota/" % (HOST, server.http.port), json={},
                                 headers={"Device-Id": "aa:bb:cc:00:%02x:%02x" % (i // 256, i % 256)}) as r:
                assert r.status == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "xiaozhi_server.transport.http_server"]
    checks = [m for m in lines if m.startswith("OTA check from")]
    assert 0 < len(checks) <= 20, "%d OTA lines for 150 calls" % len(checks)
