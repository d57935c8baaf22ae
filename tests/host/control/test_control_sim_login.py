"""`make run` then `make sim` out of the box: the board takes the broker and
its login from the OTA answer (as stock firmware takes its mqtt section),
with no `--mqtt`, so the parents' list shows it online and it takes their
command; with `--mqtt` the simulator asks the server for the login (the
server's broker refuses anonymous clients) as before."""
from testkit.control_api import eventually
from testkit.sim_process import SimProcess
from xiaozhi_server import protocol as proto

BOARD = "02:00:00:00:5e:01"


async def test_docs_sim_first_session_the_board_takes_its_login_from_ota(api, tmp_path):
    sim = await SimProcess.start(tmp_path / "state", "--server", api.server.http.ota_url, "--device-id", BOARD)
    try:
        await sim.wait_event("mqtt", action="CONNECT", ok=True, timeout=30)

        async def shown():
            rows = {d["device_id"]: d for d in (await api.get("/api/devices"))[1]["devices"]}
            row = rows.get(BOARD)
            # lessons, schedules and stop all usable (the lessons once the board's tools are listed)
            return row if row and row["online"] and row["control"] == "mqtt" and row["greyed"] == {} else None
        await eventually(shown, timeout=30)
        status, body = await api.post("/api/devices/%s/tasks" % BOARD, {"app_id": "english_translation"}, wait=10)
        assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
    finally:
        await sim.send("quit")
        await sim.wait_exit()


async def test_the_simulator_gets_its_login_and_takes_commands(api, tmp_path):
    sim = await SimProcess.start(tmp_path / "state", "--server", api.server.http.ota_url,
                                 "--mqtt", "127.0.0.1:%d" % api.server.broker.port, "--device-id", BOARD)
    try:
        await sim.wait_event("mqtt", action="CONNECT", ok=True, timeout=30)
        status, body = await api.post("/api/devices/%s/tasks" % BOARD, {"app_id": "english_translation"}, wait=10)
        assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
        await sim.wait_event("mqtt", req_id=body["req_id"], ok=True)
    finally:
        await sim.send("quit")
        await sim.wait_exit()


async def test_a_bare_server_url_and_a_late_http_port_still_give_the_board_its_login(api, tmp_path):
    # A newcomer types http://host:port (no OTA path) and starts the sim while
    # the server's HTTP port is not open yet: the sim must ask the OTA path
    # and ask for the login again, not fall back to another server or
    # retry a refused MQTT login for ever.
    import asyncio
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    sim = await SimProcess.start(tmp_path / "state", "--server", "http://127.0.0.1:%d" % port,
                                 "--mqtt", "127.0.0.1:%d" % api.server.broker.port, "--device-id", BOARD)
    try:
        await eventually(lambda: any("asking again" in line for line in sim.lines), timeout=30)
        relay = await asyncio.start_server(_relay_to(api.server.http.port), "127.0.0.1", port)
        async with relay:
            await sim.wait_event("mqtt", action="CONNECT", ok=True, timeout=60)
            status, body = await api.post("/api/devices/%s/tasks" % BOARD, {"app_id": "english_translation"},
                                          wait=10)
            assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
            assert not [e for e in sim.events if e["event"] == "error" and "OTA" in e.get("message", "")]
    finally:
        await sim.send("quit")
        await sim.wait_exit()


def _relay_to(port):
    # The server's HTTP port, opened late at the URL the sim was given.
    import asyncio

    async def pipe(r, w):
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        finally:
            w.close()

    async def handle(r, w):
        ur, uw = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(r, uw), pipe(ur, w), return_exceptions=True)
    return handle
