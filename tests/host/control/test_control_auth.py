"""The API token: always required once control.api_token is set, and the
API refuses everything when the server is exposed without one."""
import aiohttp
from aiohttp import web

from xiaozhi_server.api.routes import add_routes
from xiaozhi_server.api.console_sessions import COOKIE


async def test_a_configured_token_is_required(start_control):
    api = await start_control(api_token="s3cret-parents-token-1")
    path = "/api/devices/kid1/schedules"
    status, err = await api.get(path)
    assert status == 401 and err["error"]["code"] == "unauthorized"
    status, err = await api.call("GET", path, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, body = await api.call("GET", path, headers={"Authorization": "Bearer s3cret-parents-token-1"})
    assert status == 200 and body["schedules"] == []
    # The device-facing OTA endpoint is not behind the parents' token.
    async with api.http.post(api.base + "/xiaozhi/ota/", json={}) as r:
        assert r.status == 200


async def test_exposed_without_a_token_the_api_refuses_everything():
    # What wiring does for a non-loopback bind with no control.api_token
    # (served on loopback here: tests never leave it).
    app = web.Application()
    add_routes(app, plane=None, tokens=[], token_required=True)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get("http://127.0.0.1:%d/api/devices/d1" % port) as r:
                assert r.status == 401
                assert "control.api_token" in (await r.json())["error"]["message"]
    finally:
        await runner.cleanup()


async def test_a_rebound_name_gets_nothing_from_the_tokenless_loopback_api(start_control):
    # DNS rebinding: a page on evil.example re-pointed to 127.0.0.1 is
    # same-origin with the server, so it reaches the API with its own name in
    # Host and Origin. The real loopback names still work, with or without a port.
    api = await start_control()
    port = api.server.http.port
    path = "/api/devices/kid1/credentials"
    rebound = {"Host": "evil.example:%d" % port, "Origin": "http://evil.example:%d" % port,
               "X-Xiaozhi-Console": "1"}
    status, err = await api.call("POST", path, headers=rebound)
    assert status == 403 and "loopback" in err["error"]["message"], err
    for host in ("evil.example", "127.0.0.1.nip.io", "127.evil.com"):
        assert (await api.call("GET", "/api/devices", headers={"Host": host}))[0] == 403, host
    # A loopback Host but a page from elsewhere (or a sandboxed page) is refused too.
    for origin in ("http://evil.example", "null"):
        status, _ = await api.call("GET", "/api/devices", headers={"Origin": origin})
        assert status == 403, origin
    assert (await api.call("POST", "/api/session", {"token": "x"}, headers={"Host": "evil.example"}))[0] == 403
    async with api.http.get(api.base + "/console/", headers={"Host": "evil.example"}) as r:
        assert r.status == 403
    for host in ("127.0.0.1:%d" % port, "localhost", "localhost:%d" % port, "[::1]:%d" % port, "127.0.0.1"):
        status, body = await api.call("GET", "/api/devices", headers={"Host": host})
        assert status == 200 and body["devices"] == [], host
    status, _ = await api.call("GET", "/api/devices", headers={"Origin": "http://localhost:%d" % port})
    assert status == 200
    async with api.http.get(api.base + "/console/", headers={"Host": "localhost:%d" % port}) as r:
        assert r.status == 200
    # Nothing was handed out under the rebound name.
    status, _ = await api.call("GET", "/api/devices/kid1")
    assert (await api.call("DELETE", path))[0] == 404


async def test_with_a_token_only_the_cookie_path_checks_the_name(start_control):
    api = await start_control(api_token="s3cret-parents-token-42")
    bearer = {"Authorization": "Bearer s3cret-parents-token-42", "Host": "evil.example"}
    assert (await api.call("GET", "/api/devices", headers=bearer))[0] == 200
    async with api.http.post(api.base + "/api/session", json={"token": "s3cret-parents-token-42"}) as r:
        assert r.status == 204
        cookie = {"Cookie": "%s=%s" % (COOKIE, r.cookies[COOKIE].value)}
    assert (await api.call("GET", "/api/devices", headers=cookie))[0] == 200      # under 127.0.0.1
    assert (await api.call("GET", "/api/devices", headers=dict(cookie, Host="evil.example")))[0] == 403


async def test_wrong_tokens_from_one_address_get_a_clear_429(start_control):
    # ~4 500 guesses a second were answered before; now a handful, then 429.
    api = await start_control(api_token="s3cret-parents-token-42")
    statuses = []
    for i in range(12):
        statuses.append((await api.call("GET", "/api/devices", headers={"Authorization": "Bearer guess%d" % i}))[0])
    assert statuses[:10] == [401] * 10 and statuses[10:] == [429, 429], statuses
    async with api.http.get(api.base + "/api/devices", headers={"Authorization": "Bearer guess"}) as r:
        assert r.status == 429 and int(r.headers["Retry-After"]) >= 1
        assert "too many wrong tokens" in (await r.json())["error"]["message"]
    # The console's login counts against the same address, and while it is
    # locked even the right token learns nothing.
    status, body = await api.call("POST", "/api/session", {"token": "s3cret-parents-token-42"})
    assert status == 429 and body["error"]["code"] == "too_many_attempts"


def test_the_throttle_is_per_address_and_recovers():
    from xiaozhi_server.api.login_throttle import LoginThrottle, TooManyAttempts
    now = [0.0]
    t = LoginThrottle(burst=3, per_s=10, max_addresses=2, clock=lambda: now[0])
    for _ in range(3):
        t.check("10.0.0.1")
        t.failed("10.0.0.1")
    try:
        t.check("10.0.0.1")
        raise AssertionError("a fourth guess at once was let through")
    except TooManyAttempts as e:
        assert 1 <= e.retry_after_s <= 10
    t.check("10.0.0.2")                 # another address is not held back
    now[0] = 10.0
    t.check("10.0.0.1")                 # one more guess after per_s
    t.failed("10.0.0.2")
    t.failed("10.0.0.3")                # the table keeps two addresses: the oldest goes
    assert list(t._buckets) == ["10.0.0.2", "10.0.0.3"]
