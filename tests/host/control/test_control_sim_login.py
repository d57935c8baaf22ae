"""`make run` then `make sim --mqtt` out of the box: the simulator asks the
server it boots against for the board's broker login (the server's broker
refuses anonymous clients), and the board takes a parents' command."""
from testkit.sim_process import SimProcess
from xiaozhi_server import protocol as proto

BOARD = "02:00:00:00:5e:01"


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
