"""A command left retained on the broker reaches the board again at every
connect: the board runs it once and never again, across a reboot (NVS),
however many commands came between (the newest timestamp it handled from
the sender outlives its ring of 16 req_ids)."""
import json

import pytest

from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(120)

TRANSLATE = {"app_id": "english_translation", "task_id": "live_translate", "source": proto.SOURCE_MQTT_IMMEDIATE}


async def test_a_retained_command_is_not_run_again_after_a_reboot_and_many_commands(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    req = rig.mqtt.request(proto.ACTION_START_APP_TASK, TRANSLATE)
    rid = req["header"]["req_id"]
    await rig.mqtt.publish_raw(json.dumps(req).encode(), retain=True)
    assert (await rig.mqtt.ack_for(rid))["code"] == proto.ACK_ACCEPTED
    await fw.wait_event("task", app_id="english_translation", source="mqtt_immediate", outcome="accepted")
    for i in range(17):      # more than the board's ring of req_ids holds
        probe = rig.mqtt.request(proto.ACTION_UNSET_ALARM, {"alarm_id": "no_such_alarm"})
        probe["header"]["timestamp"] = req["header"]["timestamp"] * 1000 + 1 + i
        await rig.mqtt.publish_raw(json.dumps(probe).encode(), topic=proto.TOPIC_CMD_CTL)
    await rig.mqtt.ack_for(probe["header"]["req_id"])
    await fw.stop()

    fw = await rig.boot("cpython")
    await rig.chatting(fw)          # the broker hands the retained command over at this connect
    probe = rig.mqtt.request(proto.ACTION_UNSET_ALARM, {"alarm_id": "no_such_alarm"})
    probe["header"]["timestamp"] = req["header"]["timestamp"] * 1000 + 100
    await rig.mqtt.publish_raw(json.dumps(probe).encode(), topic=proto.TOPIC_CMD_CTL)
    assert (await rig.mqtt.ack_for(probe["header"]["req_id"]))["code"] == proto.ACK_ACCEPTED
    acks = [a for a in rig.mqtt.acks if a["req_id"] == rid]
    assert [(a["code"], a.get("reason")) for a in acks][1:] == [(proto.ACK_REFUSED, "replayed")], acks
    assert not fw.find("task", app_id="english_translation")
    assert rig.active() == "chat.conversation"
    await rig.mqtt.publish_raw(b"", retain=True)         # clear it from the broker
    await fw.stop()
