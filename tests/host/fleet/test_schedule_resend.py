"""A schedule is run once by its board even when a re-send round starts
while its ack is still to come: the board was away, the broker kept the
request for it (a persistent session), and meanwhile another node
connected to the broker, or the board's `online` report came first. The
re-send repeats the request's req_id, which the board runs once.

The board here is the firmware's own request handling (testkit/control_board.py):
what it does with a repeat (its ack again since this boot, nothing after a
reboot) is the firmware's, not this file's."""
from testkit.control_api import eventually
from testkit.control_board import ControlBoard
from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.control import plane

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


def _active(api):
    async def check():
        return (await api.get("/api/devices/kid/schedules/wake"))[1]["state"] == "active"
    return check


async def test_a_resend_while_the_ack_is_late_runs_once(fleet, broker, monkeypatch, tmp_path):
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)    # any unacked request is re-sent: the worst case
    a, b = await fleet(2)
    board = ControlBoard(broker.port, "kid", tmp_path / "nvs.json", persistent=True, identifier="board-kid")
    async with board:
        pass        # its session and subscription stay on the broker while it is away
    status, s = await a.post("/api/devices/kid/schedules", {"alarm_id": "wake", "time": "07:30",
                                                             "pending_task": LESSON})
    assert status == 201 and s["state"] == "pending_ack"

    # Another node connects to the broker while the request waits there for the board.
    await b.server.control._on_connect()
    await eventually(lambda: b.server.control.delivered == 1)
    async with board:
        # The board's report at its connect starts a round of its own, too.
        await board.publish_state(proto.mqtt_state("kid", proto.STATE_IDLE))
        got = [(await board.next_request(timeout=10))[1] for _ in range(2)]
        await eventually(_active(a))
    assert {r["payload"]["alarm_id"] for r in got} == {"wake"}
    assert {r["header"]["req_id"] for r in got} == {s["last_req_id"]}, "sent again with the req_id the board has"
    assert [(alarm, rid) for alarm, rid, _ in board.runs] == [("wake", s["last_req_id"])], "run once"


async def test_a_lost_ack_is_answered_again_when_the_request_comes_again(fleet, broker, monkeypatch, tmp_path):
    """The board ran the request and its ack was lost (its link dropped as
    it sent it): the re-send round repeats the req_id, and the board answers
    it with the ack it had, without running it again."""
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)
    [a] = await fleet(1)
    board = ControlBoard(broker.port, "kid", tmp_path / "nvs.json")
    board.lose_acks = 1
    async with board:
        status, s = await a.post("/api/devices/kid/schedules", {"alarm_id": "wake", "time": "07:30",
                                                                 "pending_task": LESSON})
        assert status == 201
        await eventually(lambda: board.runs)
        # The board reports (it is online): the round repeats the request.
        await board.publish_state(proto.mqtt_state("kid", proto.STATE_IDLE))
        await eventually(_active(a), 10)
    assert [rid for _, rid, _ in board.runs] == [s["last_req_id"]], "run once"
    assert [k["req_id"] for k in board.acks] == [s["last_req_id"]], "the ack it had, sent again"


async def test_a_lost_ack_is_asked_again_with_a_new_req_id_once_the_board_must_have_had_it(fleet, broker,
                                                                                          monkeypatch, tmp_path):
    """The board ran the request, its ack was lost, and it rebooted: it
    still knows the req_id (NVS) but no longer its ack, so a repeat is
    dropped unanswered. The sweep asks again with a new req_id once the
    board reported well after the request went out."""
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)
    monkeypatch.setattr(plane, "RESEND_INTERVAL_S", 0.5)
    monkeypatch.setattr(plane, "ACK_LOST_AFTER_S", 0.2)
    [a] = await fleet(1)
    board = ControlBoard(broker.port, "kid", tmp_path / "nvs.json")
    board.lose_acks = 1
    async with board:
        status, s = await a.post("/api/devices/kid/schedules", {"alarm_id": "wake", "time": "07:30",
                                                                 "pending_task": LESSON})
        assert status == 201
        await eventually(lambda: board.runs)
    board.reboot()
    async with board:
        # The board reports (it is online): the round repeats the request, which it drops.
        await board.publish_state(proto.mqtt_state("kid", proto.STATE_IDLE))
        await eventually(_active(a), 20)
    runs = [rid for _, rid, _ in board.runs]
    assert runs[0] == s["last_req_id"] and len(runs) == 2 and runs[1] != runs[0], runs
    assert [k["req_id"] for k in board.acks] == [runs[1]]


async def test_an_ack_sent_while_the_nodes_link_is_down_reaches_it_when_it_is_back(fleet, broker):
    """The broker keeps the node's session (its subscriptions, and what
    reaches them) while its link reconnects: the board's ack is recorded,
    and nothing is sent again. The ack is the test's to send (a wire-level
    stand-in): its subject is the moment the ack is sent, not the board's choice."""
    [a] = await fleet(1)
    link = a.server.control.link
    async with MqttDevice(broker.port, "kid", answer=lambda r: None) as board:
        status, s = await a.post("/api/devices/kid/schedules", {"alarm_id": "wake", "time": "07:30",
                                                                 "pending_task": LESSON})
        assert status == 201
        _, request = await board.next_request()
        await link.stop()
        await board.publish_ack(proto.mqtt_ack(request["header"]["req_id"], True, proto.ACK_ACCEPTED, "accepted",
                                               action=request["action"], device_id="kid"))
        await link.start()

        await eventually(_active(a), 10)
        assert board.requests.empty()
