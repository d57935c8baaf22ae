"""A wake word during translation, on the firmware process against the real
server and broker: a translation the child started by voice ends on the
device and on the server (both back in chat.conversation, the parents' app
told on rpt/state); one the parents started over MQTT is not reset."""
import pytest

from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(90)

TRANSLATE = {"app_id": "english_translation", "task_id": "live_translate"}


async def test_wake_word_ends_a_voice_started_translation(rig):
    fw = await rig.boot("cpython", speed=1)
    await rig.chatting(fw)
    await fw.send("phrase 打开翻译")
    await fw.wait_event("task", app_id="english_translation", source="voice", outcome="accepted")
    await rig.server_in("english_translation.live_translate")

    await fw.send("wake")
    back = await fw.wait_event("task", app_id="chat", task_id="conversation", outcome="accepted")
    assert back["source"] == "voice" and back["reason"] == "wake", back
    await rig.server_in("chat.conversation")
    await fw.wait_event("state", state="listening", since=0)
    # The parents' app hears where the device is now.
    report = await eventually(lambda: [s for s in rig.mqtt.states if s.get("event") == "task"
                                       and s.get("active_app_id") == "chat"], 10)
    assert report[-1]["active_task_id"] == "conversation"
    # The device's own idea is chat again: the next voice task preempts chat,
    # it does not replace a translation.
    await fw.send("phrase 打开翻译")
    again = await eventually(lambda: fw.find("task", app_id="english_translation", outcome="accepted")[1:], 15)
    assert "voice outranks default_chat" in again[0]["message"], again[0]
    await fw.stop()


async def test_wake_word_leaves_a_parents_translation_alone(rig):
    fw = await rig.boot("cpython", speed=1)
    await rig.chatting(fw)
    status, body = await rig.start_task(TRANSLATE)
    assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
    await rig.server_in("english_translation.live_translate")

    await fw.send("wake")
    refused = await fw.wait_event("task", app_id="chat", outcome="refused")
    assert refused["reason"] == "busy" and "mqtt_immediate" in refused["message"], refused
    assert rig.active() == "english_translation.live_translate"
    assert not fw.find("task", app_id="chat", outcome="accepted")
    await fw.stop()
