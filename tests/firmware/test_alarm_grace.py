# A board whose plug was pulled past an alarm: the DS3231 kept time on its
# battery and its flag stays set, but nothing could wake the board. The
# next power-on (wake_cause power_on) runs the missed lesson only within
# the grace window (alarm_grace_min); a later one is skipped with a log
# line, an `alarm` event (what: missed) and a report for the parents.
import t
import hal.host
import ds3231
import proto
from test_alarm_dates import LESSON, T0, entry_on, state_dir

AT = T0 + 3600          # 10:00, one hour after the board was set up
GRACE = {"alarm_grace_min": 30}


def _cut_past_the_alarm(tag, late_s, standby=False):
    """An alarm set, then the plug pulled (or standby), then power again
    late_s after the alarm's time: (board, entry, (task, why))."""
    d = state_dir(tag)
    b = hal.host.board(d, exit_fn=lambda code: None)
    ds3231.DS3231(b.i2c).set_time(T0)
    e = entry_on(b, GRACE)
    t.eq(e.alarms.set({"alarm_id": "seven", "at": AT, "pending_task": LESSON}, T0), None)
    if standby:
        b.power.standby(proto.STANDBY_POWER_OFF)
    b = hal.host.board(d, exit_fn=lambda code: None, advance=AT - T0 + late_s)
    e = entry_on(b, GRACE)
    return b, e, e.boot_task()


def test_a_lesson_missed_while_unpowered_runs_within_the_grace_window():
    b, e, (task, why) = _cut_past_the_alarm("in", 20 * 60)
    t.eq(b.wake_cause(), "power_on", "no power, no wake: the plug came back")
    t.eq((why, task["alarm_id"]), ("alarm", "seven"))
    t.eq(e.alarms.find("seven"), None, "a one-shot runs once")
    t.eq([ev for ev in e.events if ev.get("what") == "missed"], [])


def test_a_lesson_missed_by_more_than_the_window_is_skipped_logged_and_kept_for_the_report():
    import log
    lines = []

    class Out:
        def write(self, text):
            lines.append(text)
    log.set_output(Out())
    try:
        b, e, (task, why) = _cut_past_the_alarm("out", 8 * 3600)
    finally:
        log.set_output(None)
    t.eq(b.wake_cause(), "power_on")
    t.eq((why, task["app_id"]), ("default", "chat"), "boots into chat, not a 7:00 lesson at 15:00")
    missed = [ev for ev in e.events if ev["event"] == "alarm" and ev.get("what") == "missed"]
    t.eq(len(missed), 1, "one alarm event")
    t.eq((missed[0]["alarm_id"], missed[0]["at"], missed[0]["late_s"] >= 8 * 3600), ("seven", AT, True))
    t.true([ln for ln in lines if "skipped" in ln and "seven" in ln], "a log line")
    t.eq(e.alarms.find("seven"), None, "spent: it does not run at the next boot either")
    t.eq(e.pending()["app_id"], "chat", "nothing waits for it")
    t.eq(len(e.missed_alarms), 1, "kept for the parents' report (rpt/state alarm_missed)")
    rep = proto.mqtt_state("02:00:00:00:00:01", "idle", event="alarm_missed", message="x",
                           alarm=e.missed_alarms[0])
    t.eq(proto.validate("mqtt.state", rep), None)


def test_an_alarm_wake_is_on_time_whatever_the_clock_says():
    # In standby the chip's INT wakes the board at the alarm: no grace applies.
    b, e, (task, why) = _cut_past_the_alarm("wake", 8 * 3600, standby=True)
    t.eq(b.wake_cause(), "alarm")
    t.eq((why, task["alarm_id"]), ("alarm", "seven"))


def test_without_a_window_a_missed_lesson_runs_however_late():
    d = state_dir("nograce")
    b = hal.host.board(d, exit_fn=lambda code: None)
    ds3231.DS3231(b.i2c).set_time(T0)
    e = entry_on(b, {"alarm_grace_min": None})
    e.alarms.set({"alarm_id": "seven", "at": AT, "pending_task": LESSON}, T0)
    b = hal.host.board(d, exit_fn=lambda code: None, advance=AT - T0 + 8 * 3600)
    task, why = entry_on(b, {"alarm_grace_min": None}).boot_task()
    t.eq((why, task["alarm_id"]), ("alarm", "seven"))
