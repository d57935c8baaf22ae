"""The OTA endpoint hands no secret to a caller it does not know. With device
tokens configured, a device gets an activation code; once a parent approves
it, the same Device-Id and Client-Id get the device's own WebSocket token
and broker login, which work; anyone else still gets nothing. With no
token of any kind on loopback (`make run`'s default, where any local
process may provision a device through the API) a device gets its own
broker login from OTA, as stock firmware expects; with an API token set
nothing secret is handed out."""
import aiomqtt
import pytest

from testkit.control_api import eventually
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto

KID = {"Device-Id": "02:00:00:00:aa:01", "Client-Id": "5b1f0c9e-7d0a-4a51-9d3e-1f7c2b6a0d11"}


async def ota(api, headers, path="/xiaozhi/ota/"):
    async with api.http.post(api.base + path, json={"application": {"version": "1.0.0"}}, headers=headers) as r:
        return r.status, await r.json()


async def test_unknown_devices_get_a_code_and_nothing_secret(start_control):
    api = await start_control(auth={"tokens": ["shared-secret"]})
    status, ans = await ota(api, KID)
    assert status == 200 and proto.validate("ota.response", ans) is None
    assert ans["websocket"]["token"] == ""
    assert set(ans["control_mqtt"]) == {"url"}
    act = ans["activation"]
    assert len(act["code"]) == 6 and act["code"].isdigit() and act["challenge"] and act["timeout_ms"] > 0
    # Asking again shows the same code; the activate call waits for a parent.
    assert (await ota(api, KID))[1]["activation"]["code"] == act["code"]
    assert (await ota(api, KID, "/xiaozhi/ota/activate"))[0] == 202
    # A caller with another Client-Id (anyone who knows the MAC) gets its own code, not this one.
    other = dict(KID, **{"Client-Id": "someone-else"})
    assert (await ota(api, other))[1]["activation"]["code"] != act["code"]
    assert (await ota(api, {"Device-Id": "02:00:00:00:aa:09"}))[1].get("activation") is None   # no Client-Id


async def test_an_approved_device_gets_credentials_that_work(start_control):
    api = await start_control(auth={"tokens": ["shared-secret"]})
    code = (await ota(api, KID))[1]["activation"]["code"]
    status, approved = await api.post("/api/activations/%s" % code, None)
    assert status == 200 and approved["device_id"] == KID["Device-Id"]
    assert (await api.post("/api/activations/%s" % code, None))[0] == 404   # once
    assert (await ota(api, KID, "/xiaozhi/ota/activate"))[0] == 200

    _, ans = await ota(api, KID)
    assert "activation" not in ans
    token, login = ans["websocket"]["token"], ans["control_mqtt"]
    assert token.startswith("xzd1.") and login["username"] and login["password"]
    # The same MAC from another client still gets nothing.
    _, stranger = await ota(api, dict(KID, **{"Client-Id": "someone-else"}))
    assert stranger["websocket"]["token"] == "" and "username" not in stranger["control_mqtt"]
    # A device presenting its own token is known whatever its Client-Id.
    _, again = await ota(api, {"Device-Id": KID["Device-Id"], "Client-Id": "reflashed",
                               "Authorization": "Bearer " + token})
    assert again["websocket"]["token"] == token
    # Each grant sets a new random broker password; the one handed out last works.
    assert again["control_mqtt"]["password"] != login["password"]
    login = again["control_mqtt"]

    # The token opens a voice session for this device only.
    async with WireDevice(api.server.ws.url, device_id=KID["Device-Id"], token=token, mcp=False) as dev:
        await dev.hello()
    intruder = WireDevice(api.server.ws.url, device_id="02:00:00:00:aa:02", token=token, mcp=False)
    await intruder.connect()
    code, reason = await intruder.wait_closed(timeout=5)
    assert code == 1008 and "wrong token" in reason
    # The login opens the broker, for this device's topics.
    async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=login["username"],
                              password=login["password"], identifier="kid") as c:
        await c.publish(proto.topic(proto.TOPIC_RPT_STATE, KID["Device-Id"]),
                        proto.encode(proto.mqtt_state(KID["Device-Id"], proto.STATE_IDLE)).encode(), qos=1)

        async def reported():
            return (await api.get("/api/devices/%s" % KID["Device-Id"]))[1]["state"]
        assert (await eventually(reported))["report"]["state"] == proto.STATE_IDLE


async def test_on_the_loopback_default_a_device_gets_its_broker_login_that_works(api):
    status, ans = await ota(api, KID)
    assert status == 200 and "activation" not in ans
    login = ans["control_mqtt"]
    assert login["url"] == "mqtt://127.0.0.1:%d" % api.server.broker.port and login["username"]
    async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=login["username"],
                              password=login["password"], identifier="kid") as c:
        await c.publish(proto.topic(proto.TOPIC_RPT_STATE, KID["Device-Id"]),
                        proto.encode(proto.mqtt_state(KID["Device-Id"], proto.STATE_IDLE)).encode(), qos=1)

        async def listed():
            rows = {d["device_id"]: d for d in (await api.get("/api/devices"))[1]["devices"]}
            return rows.get(KID["Device-Id"], {}).get("state")
        assert await eventually(listed) == proto.STATE_IDLE
    assert (await ota(api, KID, "/xiaozhi/ota/activate"))[0] == 200
    # No Client-Id (not a device's OTA check): nothing.
    assert "username" not in (await ota(api, {"Device-Id": "02:00:00:00:aa:09"}))[1]["control_mqtt"]


async def test_with_an_api_token_and_no_device_tokens_nothing_secret_is_handed_out(start_control):
    api = await start_control(api_token="family-parents-token-2026")
    status, ans = await ota(api, KID)
    assert status == 200
    assert ans["websocket"]["token"] == "" and "activation" not in ans
    assert set(ans["control_mqtt"]) == {"url"}
    assert (await ota(api, KID, "/xiaozhi/ota/activate"))[0] == 200


@pytest.mark.parametrize("code", ["000000", "12ab56"])
async def test_approving_a_code_nobody_shows_is_404(start_control, code):
    api = await start_control(auth={"tokens": ["shared-secret"]})
    status, err = await api.post("/api/activations/%s" % code, None)
    assert status == 404 and err["error"]["code"] == "not_found"


async def test_one_caller_cannot_fill_the_waiting_codes_and_a_parent_sees_and_clears_them(start_control):
    """Issue 27: codes are limited per address (here: the test's loopback
    address) and per device-id prefix; a parent lists and clears them."""
    api = await start_control(auth={"tokens": ["shared-secret"]},
                              activation={"per_address": 3, "per_prefix": 2, "ttl_s": 300})
    kids = [{"Device-Id": "02:00:00:00:bb:%02x" % i, "Client-Id": "c%d" % i} for i in range(3)]
    codes = [(await ota(api, k))[1]["activation"]["code"] for k in kids[:2]]
    status, refused = await ota(api, kids[2])          # a third id of the same maker prefix
    assert status == 429 and "device ids like this one" in refused["error"]
    status, other = await ota(api, {"Device-Id": "12:34:56:00:00:01", "Client-Id": "x"})
    assert status == 200 and other["activation"]["timeout_ms"] <= 300_000
    status, refused = await ota(api, {"Device-Id": "22:34:56:00:00:01", "Client-Id": "y"})
    assert status == 429 and "this address" in refused["error"]     # the fourth code from one address

    status, listed = await api.get("/api/activations")
    assert status == 200
    waiting = listed["waiting"]
    assert [w["code"] for w in waiting] == codes + [other["activation"]["code"]]
    assert waiting[0]["device_id"] == kids[0]["Device-Id"] and waiting[0]["since"] < waiting[0]["expires"]
    async with api.http.delete(api.base + "/api/activations/%s" % codes[0]) as r:
        assert r.status == 204
    async with api.http.delete(api.base + "/api/activations/%s" % codes[0]) as r:
        assert r.status == 404
    assert (await api.post("/api/activations/%s" % codes[0], None))[0] == 404   # cleared: cannot be approved
    assert codes[0] not in [w["code"] for w in (await api.get("/api/activations"))[1]["waiting"]]
    assert (await ota(api, kids[2]))[0] == 200           # room again, for that prefix and address
