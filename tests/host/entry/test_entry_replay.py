"""A command left retained on the broker reaches the board again at every
connect: the board runs it once, remembers its req_id across the reboot
(NVS), and does not run or ack it again."""
import json

import pytest

from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(120)

TRANSLATE = {"app_id": "english_translation", "task_id": "live_translate", "source": proto.SOURCE_MQTT_IMMEDIATE}


async def test_a_retained_command_is_not_run_again_after_a_reboot(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    req = rig.mqtt.request(proto.ACTION_START_APP_TASK, TRANSLATE)
    rid = req["header"]["req_id"]
    await rig.mqtt.publish_raw(json.dumps(req).encode(), retain=True)
    assert (await rig.mqtt.ack_for(rid))["code"] == proto.ACK_ACCEPTED
    await fw.wait_event("task", app_id="english_translation", source="mqtt_immediate", outcome="accepted")
    await fw.stop()

    fw = await rig.boot("cpython")
    await rig.chatting(fw)          # the broker hands the retained command over at this connect
    probe = rig.mqtt.request(proto.ACTION_UNSET_ALARM, {"alarm_id": "no_such_alarm"})
    await rig.mqtt.publish_raw(json.dumps(probe).encode(), topic=proto.TOPIC_CMD_CTL)
    await rig.mqtt.ack_for(probe["header"]["req_id"])   # handled after the retained one
    assert [a["req_id"] for a in rig.mqtt.acks].count(rid) == 1
    assert not fw.find("task", app_id="english_translation")
    assert rig.active() == "chat.conversation"
    await rig.mqtt.publish_raw(b"", retain=True)         # clear it from the broker
    await fw.stop()
