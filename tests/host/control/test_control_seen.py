"""Every device that talks to the server is the parents' to find: a stock
device's OTA check or a WebSocket hello lists it (no MQTT login needed),
with what it can do (voice only: lessons and schedules greyed, and why),
where it is online (here, or on another node sharing the store), and
removing it deletes its rows. The OTA answer always carries
websocket.token (stock clients read it unconditionally) and the device's
own zone's offset."""
import datetime
import zoneinfo

import aiohttp

from testkit.control_api import Api, control_config, eventually
from testkit.wire_device import WireDevice
from testkit.node import start_node

STOCK = "aa:bb:cc:00:00:61"
TALKER = "aa:bb:cc:00:00:62"


def offset_now(zone):
    return int(datetime.datetime.now(zoneinfo.ZoneInfo(zone)).utcoffset().total_seconds() // 60)


async def ota(http, server, device_id):
    async with http.post(server.http.ota_url, json={"application": {"version": "1.6.2"}},
                         headers={"Device-Id": device_id, "Client-Id": "c-" + device_id}) as r:
        assert r.status == 200
        return await r.json()


async def listed(api):
    return {d["device_id"]: d for d in (await api.get("/api/devices"))[1]["devices"]}


async def test_a_stock_device_is_listed_voice_only_and_removed_with_its_rows(tmp_path):
    server = await start_node(control_config(tmp_path / "control.db"), with_broker=True)
    try:
        async with aiohttp.ClientSession() as http:
            api = Api(server, http)
            answer = await ota(http, server, STOCK)
            # The loopback default hands it its login; a stock device never uses it.
            assert answer["websocket"]["token"] and answer["control_mqtt"]["username"]
            assert answer["server_time"]["timezone_offset"] == offset_now("Asia/Shanghai")
            row = (await listed(api))[STOCK]
            assert row["via"] == "ota" and row["firmware"] == "1.6.2" and row["online"] is False
            assert row["control"] == "voice_only"
            assert row["greyed"] == {"start": "never_reported", "schedules": "never_reported", "lessons": "offline"}

            # The device's zone is its family's: the OTA answer follows it.
            await api.call("PUT", "/api/devices/%s/limits" % STOCK, {"timezone": "America/New_York"})
            answer = await ota(http, server, STOCK)
            assert answer["server_time"]["timezone_offset"] == offset_now("America/New_York")

            # A device that only says hello on the WebSocket is listed too, online.
            async with WireDevice(server.ws.url, device_id=TALKER) as dev:
                await dev.hello()

                async def online():
                    row = (await listed(api)).get(TALKER)
                    return row if row and row["online"] else None
                row = await eventually(online, timeout=20)
                assert row["via"] == "websocket" and row["control"] == "voice_only"
                assert row["greyed"] == {"start": "voice_only", "schedules": "voice_only", "lessons": "no_card"}

            async with http.delete(api.base + "/api/devices/" + STOCK) as r:
                assert r.status == 204
            assert STOCK not in await listed(api)
            assert (await api.get("/api/devices/%s/limits" % STOCK))[0] == 404
            store = server.control.store
            assert not await store.family.device_known(STOCK)
    finally:
        await server.stop()


async def test_a_device_online_on_another_node_says_which(tmp_path):
    db = tmp_path / "control.db"
    one = await start_node(control_config(db), with_broker=True)
    two = await start_node(control_config(db), with_broker=True)
    try:
        async with aiohttp.ClientSession() as http, WireDevice(two.ws.url, device_id=TALKER) as dev:
            await dev.hello()
            api = Api(one, http)

            async def elsewhere():
                row = (await listed(api)).get(TALKER)
                return row if row and row["online_elsewhere"] else None
            row = await eventually(elsewhere, timeout=20)
            assert row["online"] is False and row["online_elsewhere"] == two.node.id
            assert row["greyed"]["lessons"] == "online_elsewhere"
            status, err = await api.get("/api/devices/%s/lessons" % TALKER)
            assert status == 503 and two.node.id in err["error"]["message"]
            mine = (await listed(Api(two, http)))[TALKER]
            assert mine["online"] is True and mine["online_elsewhere"] is None

            async def nowhere():
                row = (await listed(api))[TALKER]
                return not row["online"] and row["online_elsewhere"] is None
            await dev.close()       # its session ended: no node holds it any more
            await eventually(nowhere, timeout=20)
    finally:
        await two.stop()
        await one.stop()
