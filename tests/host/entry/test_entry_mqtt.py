"""The parents' MQTT commands on a running board: preemption by priority,
refusal of lower-priority voice commands, duplicates, bad inputs."""
import json

import pytest

from testkit.control_api import eventually
from entry_rig import UNIX_PORT
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(90)

REPEATER = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 2}}


def passes(fw, name):
    return [e["pass"] for e in fw.find("player", state="pass_end", name=name)]


@pytest.mark.parametrize("interp", ["cpython", UNIX_PORT])
async def test_mqtt_repeater_interrupts_translation_and_plays_twice(rig, interp):
    fw = await rig.boot(interp)
    await rig.chatting(fw)
    await fw.send("phrase 打开翻译")
    await fw.wait_event("task", app_id="english_translation", outcome="accepted", source="voice")
    await rig.server_in("english_translation.live_translate")

    status, body = await rig.start_task(REPEATER)
    assert status == 200, body
    assert body["ack"]["ok"] is True and body["ack"]["code"] == proto.ACK_ACCEPTED, body["ack"]
    await fw.wait_event("task", app_id="english_learning", source="mqtt_immediate", outcome="accepted")
    await rig.server_in("english_learning.repeater")
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=30)
    assert passes(fw, "lesson1.mp3") == [1, 2]
    assert fw.find("mqtt", req_id=body["req_id"], ok=True)


async def test_voice_menu_is_refused_while_a_parents_task_plays(rig):
    fw = await rig.boot("cpython", speed=1)
    await rig.chatting(fw)
    req = rig.mqtt.request(proto.ACTION_START_APP_TASK, dict(REPEATER, source=proto.SOURCE_MQTT_IMMEDIATE))
    await rig.mqtt.publish_raw(json.dumps(req).encode())
    ack = await rig.mqtt.ack_for(req["header"]["req_id"])
    assert ack["code"] == proto.ACK_ACCEPTED
    await fw.wait_event("player", state="playing", name="lesson1.mp3")

    await fw.send("phrase 切换模式")
    await fw.send("phrase 打开翻译")
    refused = await fw.wait_event("task", app_id="english_translation", outcome="refused")
    assert refused["reason"] == "busy"
    assert "mqtt_immediate" in refused["message"], refused
    # The parents' app hears why on rpt/state.
    state = await eventually(lambda: [s for s in rig.mqtt.states if s.get("event") == "voice_refused"])
    assert "打开翻译" in state[0]["message"] and "mqtt_immediate" in state[0]["message"]
    # The same request again (the broker re-delivers QoS 1, or a server whose
    # node lost the ack sends it again): run once, answered with the same ack.
    await rig.mqtt.publish_raw(json.dumps(req).encode())
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=20)
    assert passes(fw, "lesson1.mp3") == [1, 2], "playback went on through the refusal"
    assert not fw.find("player", state="stopped")
    assert rig.active() == "english_learning.repeater"
    acks = await eventually(lambda: [a for a in rig.mqtt.acks if a["req_id"] == req["header"]["req_id"]][1:] and
                            [a for a in rig.mqtt.acks if a["req_id"] == req["header"]["req_id"]])
    assert len(acks) == 2 and (acks[0]["code"], acks[0]["message"]) == (acks[1]["code"], acks[1]["message"])
    assert len(fw.find("task", app_id="english_learning", source="mqtt_immediate")) == 1


async def test_bad_requests_get_refusal_acks_and_the_board_keeps_working(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    m = rig.mqtt

    async def refused(data, why):
        rid = json.loads(data)["header"]["req_id"] if data.startswith(b"{\"header\"") else None
        await m.publish_raw(data)
        if rid is None:
            return None
        ack = await m.ack_for(rid)
        assert ack["ok"] is False and ack["code"] == proto.ACK_REFUSED, ack
        assert why in (ack.get("reason") or "") + " " + ack["message"], ack
        return ack

    # Not JSON at all: nothing to ack to; the board says so in its log and goes on.
    await m.publish_raw(b"\xff{not json")
    await refused(json.dumps(m.request("REBOOT_NOW", {})).encode(), "REBOOT_NOW")
    await refused(json.dumps(m.request(proto.ACTION_START_APP_TASK, {
        "app_id": "karaoke", "task_id": "sing", "source": "mqtt_immediate"})).encode(), "karaoke")
    await refused(json.dumps(m.request(proto.ACTION_START_APP_TASK, dict(
        REPEATER, params={"name": "lesson1.mp3", "repeat": "lots"}, source="mqtt_immediate"))).encode(),
        "repeat")
    # Over the board's 2 KB buffer, under the broker's packet limit (a bigger
    # one never reaches the board: the broker closes its sender).
    big = m.request(proto.ACTION_START_APP_TASK, dict(REPEATER, params={"name": "x" * 9000, "repeat": 1},
                                                       source="mqtt_immediate"))
    ack = await refused(json.dumps(big).encode(), "too_large")
    assert int(ack["message"].split(" bytes")[0].split()[-1]) > 9000, ack     # "request of N bytes is over ..."
    await refused(json.dumps(m.request(proto.ACTION_PLAY_MEDIA, {"url": "http://x/y.mp3"})).encode(),
                  proto.ACTION_PLAY_MEDIA)
    assert not fw.find("player", state="playing"), "no bad request started anything"
    assert any("not JSON" in line or "unreadable" in line for line in fw.lines), fw.lines[-20:]

    # Still working: a good request plays.
    status, body = await rig.start_task(dict(REPEATER, params={"name": "lesson2.mp3", "repeat": 1}))
    assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
    await fw.wait_event("player", state="done", name="lesson2.mp3", timeout=20)
    assert fw.proc.returncode is None
