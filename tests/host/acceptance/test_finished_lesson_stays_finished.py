"""A lesson that is over stays over, whatever the store kept of the
conversation it was in (issue 31): the alarm's lesson plays after a
parents' lesson that ended, a board that boots with nothing to do speaks
first and hears its wake word, and a board that inherits an old
conversation gets its turns but not its task. Those three are flows of
one board each, run side by side with the seed's other flows
(test_seed_flows.py); a lesson the board still plays when its server
is killed -9 is a test of its own."""
import pytest

from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

from seed_rig import OPENER, REPLY, assistant_lines, before

pytestmark = [pytest.mark.timeout(150)]


def lesson(name, **params):
    return {"app_id": "english_learning", "task_id": "repeater", "params": dict(name=name, **params)}


async def alarm_wake_after_a_finished_parents_lesson(rig, board):
    fw = await board.boot()
    await board.ready(fw)
    at = await board.device_time(fw) + 120
    status, body = await rig.add_schedule(board, {"alarm_id": "morning", "at": at,
                                                  "pending_task": lesson("lesson2.mp3")})
    assert body["last_ack"]["code"] == proto.ACK_ACCEPTED, body
    # The parents' lesson plays to its end and the board powers off.
    status, body = await rig.start_task(board, lesson("lesson1.mp3", power_off_after=True))
    assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=30)
    await fw.wait_event("standby", timeout=30)
    assert await fw.wait_exit(20) == 0

    fw = await board.boot(speed=1, args=("--advance", "130"))
    assert (await fw.wait_event("boot", timeout=20))["wake_cause"] == "alarm"
    task = await fw.wait_event("task", app_id="english_learning", timeout=30)
    assert (task["source"], task["outcome"]) == ("schedule", "accepted"), task
    await fw.wait_event("player", state="playing", name="lesson2.mp3", timeout=20)
    first = before(fw, "player", state="playing", name="lesson2.mp3")
    assert not [e for e in first if e["event"] == "subtitle" and e["role"] == "assistant"], first
    await fw.wait_event("player", state="done", name="lesson2.mp3", timeout=30)
    assert OPENER not in assistant_lines(fw)
    await fw.stop()


async def power_cut_past_an_alarm_then_chat(rig, board):
    fw = await board.boot()
    await board.ready(fw)
    at = await board.device_time(fw) + 120
    status, body = await rig.add_schedule(board, {"alarm_id": "once", "at": at,
                                                  "pending_task": lesson("lesson1.mp3")})
    assert body["last_ack"]["code"] == proto.ACK_ACCEPTED, body
    await fw.send("quit")       # the plug pulled: no standby
    await fw.wait_exit(20)

    # Power back past the alarm: the lesson runs at boot and ends.
    fw = await board.boot(speed=1, args=("--advance", "130"))
    await fw.wait_event("task", app_id="english_learning", source="schedule", outcome="accepted", timeout=30)
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=30)
    await fw.send("quit")       # the plug pulled again
    await fw.wait_exit(20)

    fw = await board.boot()
    boot = await fw.wait_event("boot", timeout=20)
    assert boot["wake_cause"] != "alarm" and boot["pending"]["app_id"] == "chat", boot
    await board.opener(fw)
    mark = fw.mark()
    await fw.send("wake")
    await fw.wait_event("state", state="listening", since=mark + 1, timeout=20)
    assert not fw.find("task", app_id="chat", outcome="refused"), fw.find("task")
    assert not fw.find("player", state="playing", since=mark)
    await fw.stop()


async def kept_task_of_an_earlier_run(rig, board):
    # An earlier board under this id was in a parents' lesson; this one is new.
    await rig.server.control.store.conversations.save_conversation(board.device_id, {
        "turns": [{"role": "user", "content": "my name is Lily"},
                  {"role": "assistant", "content": "Hello Lily."}],
        "app_id": "english_learning", "task_id": "repeater",
        "app_state": {"params": {"name": "lesson1.mp3"}, "source": "mqtt_immediate"}})
    fw = await board.boot()
    await board.ready(fw)
    mark = fw.mark()
    await fw.send("wake")
    await fw.wait_event("state", state="listening", since=mark + 1, timeout=20)
    assert not fw.find("task", outcome="refused"), fw.find("task")
    # The turns are kept: the child's next words reach the model after them.
    await board.say(fw, "What is my name?")
    answer = await fw.wait_event("subtitle", role="assistant", since=mark, text=REPLY, timeout=60)
    assert answer
    said = [m.get("content") for m in rig.llm.requests[-1].messages]
    assert said.index("my name is Lily") + 1 == said.index("Hello Lily.") < len(said) - 1, said
    assert "name" in said[-1].lower(), said
    await fw.stop()


async def test_a_lesson_the_board_plays_goes_on_when_its_worker_is_killed_with_the_turns(start_seed):
    """The other side of the rule: a lesson the board still plays when the
    process that served it is killed -9 is taken up by the one it
    reconnects to (no chat opener over it, the parents' lesson keeps its
    priority), and the turns before it are kept."""
    rig = await start_seed()
    board = rig.board("02:00:00:00:a1:04")
    fw = await board.boot(speed=1, reconnect={"attempts": 200, "first_ms": 300, "max_ms": 1000})
    await board.ready(fw)
    mark = fw.mark()
    await board.say(fw, "My name is Lily.")
    await fw.wait_event("subtitle", role="assistant", text=REPLY, since=mark, timeout=60)
    await fw.wait_event("state", state="listening", since=mark + 1, timeout=20)
    status, body = await rig.start_task(board, lesson("lesson1.mp3", repeat=12))
    assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
    await fw.wait_event("player", state="playing", name="lesson1.mp3", timeout=20)

    mark = fw.mark()
    await rig.kill_worker_of(board.device_id)
    await fw.wait_event("channel", state="closed", since=mark, timeout=20)
    opened = await fw.wait_event("channel", state="open", since=mark, timeout=60)
    opened = next(i for i in range(mark, len(fw.events)) if fw.events[i] is opened)
    # The lesson plays on, and the child's wake word does not reset it.
    await fw.send("wake")
    refused = await fw.wait_event("task", app_id="chat", outcome="refused", since=opened)
    assert "mqtt_immediate" in refused["message"], refused
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=60)
    assert not fw.find("player", state="stopped"), fw.find("player")
    assert not fw.find("subtitle", role="assistant", since=opened), "chat spoke over the lesson"
    # The lesson over, the child talks again and the earlier turn is there.
    mark = fw.mark()
    await fw.send("wake")
    await fw.wait_event("state", state="listening", since=mark + 1, timeout=20)
    await board.say(fw, "What is my name?")
    await fw.wait_event("subtitle", role="assistant", text=REPLY, since=mark, timeout=60)
    said = [m.get("content") for m in rig.llm.requests[-1].messages]
    assert "My name is Lily." in said[:-1] and "name" in said[-1].lower(), said
    await fw.stop()
