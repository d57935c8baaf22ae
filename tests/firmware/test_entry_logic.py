# Entry channels, pure logic: priorities, boot resolution, alarm times,
# the command table, MQTT packets.
import t
import hal.host  # noqa: F401
import proto
import mqtt
import ds3231
import nvs_store
import priority
from app.entry import gateway, boot_resolver, alarms, commands
from app.entry.task import task as make_task

DAY = 86400
MON = 4 * DAY   # 1970-01-05 was a Monday


def _cur(source, app="english_learning", task="repeater"):
    return make_task(app, task, {}, source)


def test_priorities_preempt_replace_refuse():
    t.eq(gateway.decide(_cur("voice"), "mqtt_immediate")[0], priority.PREEMPT)
    t.eq(gateway.decide(_cur("voice"), "schedule")[0], priority.PREEMPT)
    t.eq(gateway.decide(_cur("default_chat"), "voice")[0], priority.PREEMPT)
    t.eq(gateway.decide(_cur("mqtt_immediate"), "mqtt_immediate")[0], priority.REPLACE)
    v, why = gateway.decide(_cur("mqtt_immediate"), "voice")
    t.eq(v, priority.REFUSE)
    t.true("english_learning.repeater" in why and "mqtt_immediate" in why, why)
    t.eq(gateway.decide(_cur("schedule"), "voice")[0], priority.REFUSE)
    t.eq(gateway.decide(_cur("mqtt_immediate"), "schedule")[0], priority.REFUSE)


def _pending(app, task, source, alarm_id=None):
    return proto.pending_task(app, task, source, 100, params={"name": "a.mp3"} if app != "chat" else {},
                              alarm_id=alarm_id)


def test_boot_resolution_table():
    rep = _pending("english_learning", "repeater", "schedule", "a1")
    chat = _pending("chat", "conversation", "default_chat")
    cached = {"req_id": "r1", "app_id": "english_translation", "task_id": "live_translate", "params": {}}
    due = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "b.mp3"}, "alarm_id": "d1"}
    r = boot_resolver.resolve
    t.eq(r("power_on", cached, rep)[1], "cached_mqtt")
    t.eq(r("alarm", cached, rep, due)[0]["source"], "mqtt_immediate")
    task, why = r("alarm", None, chat, due)                              # the due alarm's own task
    t.eq((why, task["source"], task["params"], task["alarm_id"]), ("alarm", "schedule", {"name": "b.mp3"}, "d1"))
    t.eq(r("power_on", None, chat, due)[1], "alarm")                     # fell due while unpowered
    t.eq(r("alarm", None, rep)[1], "not_due")                            # woken early: the pending lesson waits
    t.eq(r("alarm", None, rep, dict(due, app_id="chat", task_id="conversation"))[1], "default")  # a chat alarm
    t.eq(r("power_on", None, rep)[1], "default")                         # not due yet: waits
    t.eq(r("power_on", None, None)[1], "default")                        # first provisioning
    t.eq(r("power_on", None, {"app_id": 5})[1], "default")               # garbage
    t.eq(r("power_on", {"app_id": "x"}, None)[1], "default")             # bad cache ignored
    other = _pending("english_translation", "live_translate", "voice")
    t.eq(r("power_on", None, other)[1], "pending")


def test_next_due_one_shot_daily_and_days():
    now = MON + 8 * 3600                      # Monday 08:00 UTC
    t.eq(alarms.next_due({"at": now + 120}, now), now + 120)
    t.eq(alarms.next_due({"at": now}, now), None)
    t.eq(alarms.next_due({"time": "07:30"}, now), MON + DAY + 7 * 3600 + 1800)   # tomorrow
    t.eq(alarms.next_due({"time": "09:00"}, now), MON + 9 * 3600)                # today
    t.eq(alarms.next_due({"time": "07:30", "days": [3]}, now), MON + 2 * DAY + 7 * 3600 + 1800)  # Wednesday
    t.eq(alarms.next_due({"time": "07:30", "days": [1]}, now), MON + 7 * DAY + 7 * 3600 + 1800)  # next Monday
    # 07:30 at UTC+8 is 23:30 UTC the day before
    t.eq(alarms.next_due({"time": "07:30"}, now, 8 * 3600), MON + DAY - 1800)
    tt, e = alarms.next_alarm([{"alarm_id": "a", "time": "09:00"}, {"alarm_id": "b", "at": now + 60}], now)
    t.eq((tt, e["alarm_id"]), (now + 60, "b"))
    t.raises(ValueError, alarms.parse_hhmm, "25:00")


def test_alarm_table_arms_the_next_and_keeps_pending():
    b = hal.host.board(t.tmpdir("al"), exit_fn=lambda code: None)
    rtc = ds3231.DS3231(b.i2c)
    now = MON + 8 * 3600 + 2000 * 7 * DAY     # a Monday 08:00 in 2008 (the chip holds 2000..2199)
    rtc.set_time(now)
    st = nvs_store.RecordStore(b.nvs("xzalarms"), 2048)
    al = alarms.Alarms(rtc, st)
    task = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "a.mp3"}}
    t.eq(al.set({"alarm_id": "old", "at": now - 5, "pending_task": task}, now) is not None, True)
    t.eq(al.set({"alarm_id": "d", "time": "09:00", "pending_task": task}, now), None)
    t.eq(al.set({"alarm_id": "o", "at": now + 120, "pending_task": task}, now), None)
    # The chip's clock runs on real time while the test does: bracket the
    # reading between two reads of it rather than expect exactly 120 s.
    before = rtc.time()
    left = b.rtc_model.seconds_to_next_alarm()
    t.true(now + 120 - rtc.time() <= left <= now + 120 - before, "armed for now + 120: %r" % left)
    t.eq(st.get("pending")["alarm_id"], "o")
    t.eq(st.get("pending")["source"], "schedule")
    t.eq(al.fired(now + 30), None)            # early: nothing runs, still armed
    t.eq(al.armed()["alarm_id"], "o")
    b.clock.warp(121)
    t.true(rtc.alarm_fired(), "the chip fired")
    e = al.fired(rtc.time())
    t.eq(e["alarm_id"], "o")
    t.eq(al.find("o"), None)                  # one-shot dropped
    t.eq(al.armed()["at"], now + 3600)        # the daily one is next: today 09:00
    t.true(not rtc.alarm_fired(), "INT released")
    t.eq(st.get("pending")["alarm_id"], "d")
    t.true(al.unset("d", rtc.time()), "unset")
    t.eq(al.unset("d", rtc.time()), False)    # already absent: nothing changes
    t.true(not rtc.alarm_enabled(), "nothing armed")
    t.eq(st.get("pending")["app_id"], "chat")


class _Clock:
    def __init__(self):
        self.ms = 0

    def ticks_ms(self):
        return self.ms

    def ticks_diff(self, a, b):
        return a - b


def test_command_table_menu_and_reserved():
    c = _Clock()
    cmds = commands.Commands(commands.load("firmware/assets/commands.json"), c, lambda: ["b.mp3", "a.mp3"])
    t.eq(cmds.match("我们来聊天吧"), ("task", "chat", "conversation", {}))
    t.eq(cmds.match("聊会天吧。"), ("task", "chat", "conversation", {}))
    t.eq(cmds.match("背数字")[0], "unknown")                       # only inside the menu
    t.eq(cmds.match("切换模式"), ("menu", "voice_entry"))
    t.true("成语接龙" in cmds.phrases(), "menu phrases")
    t.eq(cmds.match("背数字"), ("reserved", "english_learning", "digit_recitation"))
    t.eq(cmds.current_step(), "main")
    t.eq(cmds.match("切换模式")[0], "menu")
    t.eq(cmds.match("打开翻译"), ("task", "english_translation", "live_translate", {}))
    t.eq(cmds.match("开始复读"), ("task", "english_learning", "repeater", {"name": "a.mp3", "repeat": 3}))
    cmds.match("切换模式")
    c.ms = 11000                                                   # the menu timed out
    t.eq(cmds.current_step(), "main")


def test_mqtt_packets():
    buf = bytearray(64)
    n = mqtt.encode_connect(buf, "dev1", 60)
    t.eq(bytes(buf[:n]), b"\x10\x10\x00\x04MQTT\x04\x02\x00\x3c\x00\x04dev1")
    n = mqtt.encode_publish(buf, "a/b", b"hi", qos=1, pid=7)
    t.eq(bytes(buf[:n]), b"\x32\x09\x00\x03a/b\x00\x07hi")
    topic, qos, pid, payload = mqtt.parse_publish(buf[0], memoryview(buf)[2:n])
    t.eq((bytes(topic), qos, pid, bytes(payload)), (b"a/b", 1, 7, b"hi"))
    n = mqtt.encode_subscribe(buf, 3, "x/#", 1)
    t.eq(bytes(buf[:n]), b"\x82\x08\x00\x03\x00\x03x/#\x01")
    t.eq(bytes(buf[:mqtt.encode_puback(buf, 258)]), b"\x40\x02\x01\x02")
    i = mqtt.put_varlen(buf, 0, 16384)
    t.eq(bytes(buf[:i]), b"\x80\x80\x01")
    t.eq(mqtt.varlen_size(16384), 3)
    t.raises(ValueError, mqtt.encode_publish, bytearray(16), "t", b"x" * 20)
    t.raises(mqtt.MQTTError, mqtt.parse_publish, 0x30, memoryview(b"\x00\x09ab"))
