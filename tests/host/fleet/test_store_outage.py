"""The control database goes away and comes back: the API answers 503
naming it, devices are still answered by OTA, nothing the API acknowledged
is lost, and the node reconnects by itself."""
from testkit.control_api import eventually
from testkit.control_board import ControlBoard
from testkit.postgres import Postgres

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def test_a_database_that_goes_away_gives_503_and_the_node_recovers(fleet, broker, monkeypatch):
    pg = Postgres().start()
    try:
        monkeypatch.setattr(fleet, "url", pg.new_schema_url())
        await _outage(fleet, broker, pg)
    finally:
        pg.close()


async def _outage(fleet, broker, pg):
    [node] = await fleet(1)
    sched = "/api/devices/kid/schedules"
    async with ControlBoard(broker.port, "kid") as device:
        status, s = await node.post(sched, {"alarm_id": "before", "time": "07:30", "pending_task": LESSON}, wait=5)
        assert status == 201 and s["state"] == "active"
        await device.next_request()

        pg.stop()
        status, err = await node.post(sched, {"alarm_id": "during", "time": "08:30", "pending_task": LESSON})
        assert status == 503 and err["error"]["code"] == "store_unavailable"
        assert "control database" in err["error"]["message"] and str(pg.port) in err["error"]["message"]
        async with node.http.post(node.base + "/xiaozhi/ota/", json={}, headers={"Device-Id": "kid"}) as r:
            assert r.status == 200 and str(node.server.ws.port) in (await r.json())["websocket"]["url"]
        async with node.http.get(node.base + "/health") as r:
            assert r.status == 200

        pg.start()

        async def back():
            status, _ = await node.get(sched)
            return status == 200
        await eventually(back, timeout=10)
        status, s = await node.post(sched, {"alarm_id": "after", "time": "09:30", "pending_task": LESSON}, wait=5)
        assert status == 201 and s["state"] == "active"
        _, listed = await node.get(sched)
        assert [(x["alarm_id"], x["state"]) for x in listed["schedules"]] == [("before", "active"), ("after", "active")]
        beats = node.server.node.beats
        await eventually(lambda: node.server.node.beats > beats + 1)     # the heartbeat came back too
        _, nodes = await node.get("/api/nodes")
        assert [n["live"] for n in nodes["nodes"]] == [True]
