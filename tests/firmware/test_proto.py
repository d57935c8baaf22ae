# The generated protocol module on the board's interpreter: every shared
# example is judged as the server judges it, and refusals carry a reason.
import json
import os

import proto
import t

EXAMPLES = "shared/protocol/examples"


def _schema_id(dirname):
    # tool_<name>/ holds a device tool's arguments, result_<name>/ its answers.
    for prefix in ("tool", "result"):
        if dirname.startswith(prefix + "_"):
            return prefix + ":" + dirname[len(prefix) + 1:]
    return dirname


def _load(path):
    with open(path) as f:
        return json.load(f)


def _each(prefix):
    for d in sorted(os.listdir(EXAMPLES)):
        if _schema_id(d) not in proto.SCHEMAS:
            continue  # checked on the host only (x-board: false)
        for name in sorted(os.listdir(EXAMPLES + "/" + d)):
            if name.startswith(prefix):
                yield _schema_id(d), name, _load(EXAMPLES + "/" + d + "/" + name)


def test_every_valid_example_passes():
    n = 0
    for sid, name, msg in _each("ok-"):
        t.eq(proto.validate(sid, msg), None, sid + "/" + name)
        n += 1
    t.true(n > 30, "examples found")


def test_every_invalid_example_is_refused_with_its_reason():
    n = 0
    for sid, name, case in _each("bad-"):
        reason = proto.validate(sid, case["message"])
        t.true(reason is not None, sid + "/" + name + " was accepted")
        t.true(case["reason"] in reason, "%s/%s: %r lacks %r" % (sid, name, reason, case["reason"]))
        n += 1
    t.true(n > 30, "examples found")


def test_decode_ws_sorts_bad_from_unknown():
    msg = proto.decode_ws('{"type":"tts","state":"start","session_id":"s"}', proto.DOWN)
    t.eq(msg["state"], proto.TTS_START)
    e = t.raises(proto.ProtoError, proto.decode_ws, '{"type":"weather","x":1}', proto.DOWN)
    t.true(e.unknown, "unknown type flagged")
    for text in ('{"type":', '[1,2]', '{"state":"start"}', '{"type":"tts","state":"pause"}'):
        e = t.raises(proto.ProtoError, proto.decode_ws, text, proto.DOWN)
        t.true(not e.unknown and len(str(e)) > 5, text)
    # a device must not accept a message only a device sends
    e = t.raises(proto.ProtoError, proto.decode_ws, '{"type":"listen","state":"start"}', proto.DOWN)
    t.true(e.unknown)


def test_oversized_text_is_refused_before_parsing():
    big = '{"type":"stt","text":"' + "a" * proto.MAX_TEXT_MESSAGE + '"}'
    e = t.raises(proto.ProtoError, proto.decode_ws, big, proto.DOWN)
    t.true("limit" in str(e))


def test_builders_make_messages_that_validate():
    ap = {"format": "opus", "sample_rate": proto.UPSTREAM_SAMPLE_RATE, "channels": 1,
          "frame_duration": proto.FRAME_DURATION_MS}
    hello = proto.hello_device(1, "websocket", ap, features={"mcp": True})
    t.eq(proto.validate("ws.hello_device", hello), None)
    t.eq(hello["type"], "hello")
    back = json.loads(proto.encode(proto.listen(proto.LISTEN_DETECT, text="你好小智")))
    t.eq(back, {"type": "listen", "state": "detect", "text": "你好小智"})
    req = proto.rpc_request(7, proto.METHOD_APP_START_TASK,
                            proto.app_start_task("english_learning", "repeater", proto.SOURCE_SCHEDULE,
                                                 params={"name": "a.mp3", "repeat": 2}))
    t.eq(proto.check_rpc(req)["params"]["source"], "schedule")
    bad = proto.rpc_request(8, proto.METHOD_APP_START_TASK, {"app_id": "chat"})
    e = t.raises(proto.ProtoError, proto.check_rpc, bad)
    t.true("task_id" in str(e))
    ack = proto.mqtt_ack("r-1", False, proto.ACK_REFUSED, "busy", reason="priority")
    t.eq(proto.validate("mqtt.ack", ack), None)


def test_tool_results_are_text_as_stock_devices_send_them():
    t.eq(proto.tool_result(True)["content"][0]["text"], "true")
    t.eq(proto.tool_result(42)["content"][0]["text"], "42")
    r = proto.tool_result({"accepted": True})
    t.eq(json.loads(r["content"][0]["text"]), {"accepted": True})
    t.eq(r["isError"], False)


def test_binary_vectors():
    vec = _load("shared/protocol/vectors/binary.json")
    for v in vec["valid"]:
        data = bytes.fromhex(v["hex"].replace(" ", ""))
        ftype, ts, payload = proto.unpack_frame(v["version"], data)
        t.eq((ftype, ts), (v["type"], v["timestamp"]), v["hex"])
        t.eq(bytes(payload), bytes.fromhex(v["payload"]), v["hex"])
        t.eq(proto.pack_frame(v["version"], bytes(payload), ftype, ts), data, v["hex"])
    for v in vec["invalid"]:
        data = bytes.fromhex(v["hex"].replace(" ", ""))
        e = t.raises(proto.ProtoError, proto.unpack_frame, v["version"], data)
        t.true(v["error"] in str(e), "%s: %s" % (v["hex"], e))


def test_mqtt_request_decoding():
    good = ('{"header":{"device_id":"d1","req_id":"r1"},"action":"UNSET_ALARM",'
            '"payload":{"alarm_id":"morning"}}')
    t.eq(proto.decode_mqtt_request(good.encode())["action"], proto.ACTION_UNSET_ALARM)
    for data in (b"\xff\xfe", b"not json", b"[]", b'{"header":{},"action":"X","payload":{}}',
                 b"{" + b" " * proto.MQTT_MAX_PAYLOAD + b"}"):
        t.raises(proto.ProtoError, proto.decode_mqtt_request, data)
    t.eq(proto.topic(proto.TOPIC_RPT_ACK, "d1"), "snlp/v1/d1/rpt/ack")


def test_transitions_cover_every_state():
    for s in proto.DEVICE_STATES:
        t.true(s in proto.DEVICE_TRANSITIONS, s)
        for nxt in proto.DEVICE_TRANSITIONS[s]:
            t.true(nxt in proto.DEVICE_STATES, nxt)
    t.true(proto.STATE_SPEAKING in proto.DEVICE_TRANSITIONS[proto.STATE_LISTENING])
