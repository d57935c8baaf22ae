"""Pulling the plug (SIGKILL) while the board rewrites pending_task: the
next boot reads the old or the new task, never a broken one."""
import asyncio
import json
import signal

import pytest

from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(90)

TASKS = [{"app_id": "english_learning", "task_id": "repeater", "params": {"name": n, "repeat": 1}}
         for n in ("lesson1.mp3", "lesson2.mp3")]
KILL_AFTER_S = (0.05, 0.2, 0.4)


def same_task(rec, task):
    return rec["app_id"] == task["app_id"] and rec["params"] == task["params"]


async def test_power_cut_during_pending_writes_leaves_old_or_new(rig):
    written = []         # every pending task the board was asked to store
    cut_mid_burst = 0
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    for delay in KILL_AFTER_S:
        before = len(rig.mqtt.acks)
        sent = 0
        # SET_ALARM rewrites pending_task each time its task changes: a
        # burst of them, and the plug is pulled somewhere inside it.
        burst = []
        for i in range(40):
            task = TASKS[i % 2]
            req = rig.mqtt.request(proto.ACTION_SET_ALARM, {
                "alarm_id": "cut", "at": 4102444800, "pending_task": task})
            burst.append(json.dumps(req).encode())
        written.extend(TASKS)

        async def send_all():
            nonlocal sent
            for data in burst:
                await rig.mqtt.publish_raw(data, proto.TOPIC_CMD_CTL)
                sent += 1
        sender = asyncio.create_task(send_all())
        await fw.wait_event("alarm", what="set", since=fw.mark())
        await asyncio.sleep(delay)
        fw.proc.send_signal(signal.SIGKILL)
        await fw.proc.wait()
        await sender
        if len(rig.mqtt.acks) - before < sent:
            cut_mid_burst += 1

        fw = await rig.boot("cpython")
        boot = await fw.wait_event("boot")
        rec = boot["pending"]
        assert proto.validate("registry.pending_task", rec) is None, rec
        assert any(same_task(rec, t) for t in written), rec
        assert rec["source"] == "schedule" and rec["alarm_id"] == "cut"
        assert rig.pending() == rec
        await rig.chatting(fw)
    assert cut_mid_burst, "the plug was never pulled inside a burst of writes"
    await fw.stop()
