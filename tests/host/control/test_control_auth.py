"""The API token: always required once control.api_token is set, and the
API refuses everything when the server is exposed without one."""
import aiohttp
from aiohttp import web

from xiaozhi_server.control.api import add_routes


async def test_a_configured_token_is_required(start_control):
    api = await start_control(api_token="s3cret")
    path = "/api/devices/kid1/schedules"
    status, err = await api.get(path)
    assert status == 401 and err["error"]["code"] == "unauthorized"
    status, err = await api.call("GET", path, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, body = await api.call("GET", path, headers={"Authorization": "Bearer s3cret"})
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
