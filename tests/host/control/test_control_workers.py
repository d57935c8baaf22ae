"""The parents' API on a server whose sessions live in worker processes
(server.workers 2, what `auto` gives on a 2-core machine): every device
with a voice session on the node shows online with what it does, whichever
worker holds it; a board's lesson list is read from its card through that
worker; a device without a card says so; forgetting a device ends its
session wherever it is."""
import asyncio

import aiohttp

from testkit.control_api import Api, control_config, eventually
from testkit.wire_device import WireDevice
from testkit.node import start_node

BOARD = "aa:bb:cc:00:00:51"
STOCK = "aa:bb:cc:00:00:52"


def card():
    listing = {"files": [{"name": "lesson001.mp3", "size": 482304}, {"name": "lesson002.mp3"}]}
    return {"self.mp3.get_list": lambda a: listing,
            "self.mp3.play": lambda a: {"accepted": True, "status": "playing"}}


async def test_every_session_of_the_node_is_seen_whichever_worker_holds_it(tmp_path):
    cfg = control_config(tmp_path / "control.db")
    cfg["server"]["workers"] = 2
    server = await start_node(cfg, with_broker=True)
    try:
        async with aiohttp.ClientSession() as http:
            api = Api(server, http)
            for device_id in (BOARD, STOCK):
                assert (await api.post("/api/devices/%s/credentials" % device_id, {}))[0] == 200
            async with WireDevice(server.ws.url, device_id=BOARD, tools=card()) as board, \
                    WireDevice(server.ws.url, device_id=STOCK) as stock:
                await board.hello()
                await stock.hello()

                async def rows():
                    listed = {d["device_id"]: d for d in (await api.get("/api/devices"))[1]["devices"]}
                    return listed if listed[BOARD]["online"] and listed[STOCK]["online"] else None
                listed = await eventually(rows, timeout=20)
                assert listed[BOARD]["app"] == "chat" and listed[STOCK]["app"] == "chat"
                assert listed[BOARD]["last_seen"] is not None

                status, body = await api.get("/api/devices/%s/lessons" % BOARD)
                assert status == 200, body
                assert [x["name"] for x in body["lessons"]] == ["lesson001.mp3", "lesson002.mp3"]
                assert ("self.mp3.get_list", {}) in board.tool_calls
                status, err = await api.get("/api/devices/%s/lessons" % STOCK)
                assert status == 503 and "no SD card player" in err["error"]["message"]

                async with http.delete(api.base + "/api/devices/" + STOCK) as r:
                    assert r.status == 204
                await stock.wait_for(lambda: stock.closed is not None, timeout=20)
                status, err = await api.get("/api/devices/%s/lessons" % STOCK)
                assert status == 404
    finally:
        await server.stop()
