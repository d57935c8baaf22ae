"""A schedule is run once by its board even when a re-send round starts
while its ack is still to come: the board was away, the broker kept the
request for it (a persistent session), and meanwhile another node
connected to the broker, or the board's `online` report came first. The
re-send repeats the request's req_id, which the board runs once."""
import collections

from testkit.control_api import eventually
from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.control import plane

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def _runs_on_the_board(board, sent):
    """req_ids per alarm of the `sent` requests the board gets (it acks each)."""
    got = collections.defaultdict(list)
    for _ in range(sent):
        _, request = await board.next_request(timeout=10)
        got[request["payload"]["alarm_id"]].append(request["header"]["req_id"])
    return got


async def test_a_resend_while_the_ack_is_late_runs_once(fleet, broker, monkeypatch):
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)    # any unacked request is re-sent: the worst case
    a, b = await fleet(2)
    board = MqttDevice(broker.port, "kid", persistent=True, identifier="board-kid")
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
        runs = await _runs_on_the_board(board, 2)

        async def active():
            return (await a.get("/api/devices/kid/schedules/wake"))[1]["state"] == "active"
        await eventually(active)
    assert set(runs) == {"wake"}
    assert set(runs["wake"]) == {s["last_req_id"]}, "sent again with the req_id the board already has: run once"


class _Board:
    """The board's answer to requests: a req_id it has seen is dropped without
    an ack (firmware/app/control/control.py); the first ack is lost on the
    way (its link dropped as it sent it)."""

    def __init__(self):
        self.seen = []

    def __call__(self, request):
        req_id = request["header"]["req_id"]
        first = not self.seen
        if req_id in self.seen:
            return None
        self.seen.append(req_id)
        return None if first else proto.mqtt_ack(req_id, True, proto.ACK_ACCEPTED, "accepted",
                                                 action=request["action"], device_id="kid")


async def test_a_lost_ack_is_asked_again_with_a_new_req_id_once_the_board_must_have_had_it(fleet, broker,
                                                                                          monkeypatch):
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)
    monkeypatch.setattr(plane, "RESEND_INTERVAL_S", 0.5)
    monkeypatch.setattr(plane, "ACK_LOST_AFTER_S", 0.2)
    [a] = await fleet(1)
    answer = _Board()
    async with MqttDevice(broker.port, "kid", answer=answer) as board:
        status, s = await a.post("/api/devices/kid/schedules", {"alarm_id": "wake", "time": "07:30",
                                                                 "pending_task": LESSON})
        assert status == 201
        await eventually(lambda: answer.seen)
        # The board reports (it is online): the round repeats the request, which it drops.
        await board.publish_state(proto.mqtt_state("kid", proto.STATE_IDLE))

        async def active():
            return (await a.get("/api/devices/kid/schedules/wake"))[1]["state"] == "active"
        await eventually(active, 20)
    assert answer.seen[0] == s["last_req_id"] and len(answer.seen) == 2, answer.seen


async def test_an_ack_sent_while_the_nodes_link_is_down_reaches_it_when_it_is_back(fleet, broker):
    """The broker keeps the node's session (its subscriptions, and what
    reaches them) while its link reconnects: the board's ack is recorded,
    and nothing is sent again."""
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

        async def active():
            return (await a.get("/api/devices/kid/schedules/wake"))[1]["state"] == "active"
        await eventually(active, 10)
        assert board.requests.empty()
