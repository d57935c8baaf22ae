# Alarms further ahead than the DS3231 can express: its alarm matches a day
# of the month, not a month, so a lesson set 40 days ahead matches the same
# day number of an earlier month. The board (host HAL, the real register
# model, the entry's own boot path) sleeps in standby between wakes, like
# tools/sim.py --wake-on-alarm; a lesson may run only once its date has come.
import t
import hal.host
from hal import civil
import ds3231
import proto
from app.entry.entry import Entry
from app.events import Bus

DAY = 86400
LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}
T0 = civil.to_epoch(2026, 3, 15, 9, 0, 0)
FAR = T0 + 40 * DAY   # 24 April: the chip's day 24 also comes on 24 March


def entry_on(board, cfg=None):
    """The entry side on a board, with what boot and the alarm table use:
    the board, a config and an event bus (e.events: what it emitted)."""
    bus = Bus()
    e = Entry(board, cfg or {}, bus)
    e.events = []
    bus.listen(e.events.append)
    return e


def state_dir(tag):
    # tmpfs when there is one: the host NVS syncs every commit to disk.
    try:
        import os
        os.stat("/dev/shm")
        # One directory per run, as t.tmpdir: the unix port has no getpid, and
        # suites run at once (other checkouts, both heaps) shared "xz-fw-0"
        # and cut each other's boards (the thousand-cuts test failed so).
        base = "/dev/shm/" + t._base().rsplit("/", 1)[-1]
        for p in (base, base + "/" + tag):
            try:
                os.mkdir(p)
            except OSError:
                pass
        t.rmtree_contents(base + "/" + tag)
        return base + "/" + tag
    except (OSError, AttributeError):
        return t.tmpdir(tag)


def _fresh_board(d):
    b = hal.host.board(d, exit_fn=lambda code: None)
    ds3231.DS3231(b.i2c).set_time(T0)
    return b


def _sleep_until_alarm(b, d):
    """Standby, then the next boot when the chip's INT wakes the board (None: no alarm)."""
    wait = b.rtc_model.seconds_to_next_alarm(horizon=60 * DAY)
    b.power.standby(proto.STANDBY_POWER_OFF)
    if wait is None:
        return None
    return hal.host.board(d, exit_fn=lambda code: None, advance=wait + 1)


def test_a_lesson_40_days_ahead_runs_on_its_date_not_a_month_early():
    d = state_dir("far")
    b = _fresh_board(d)
    e = entry_on(b)
    t.eq(e.alarms.set({"alarm_id": "far", "at": FAR, "pending_task": LESSON}, T0), None)
    ran = None
    wakes = []
    for _ in range(6):
        b = _sleep_until_alarm(b, d)
        t.true(b is not None, "an alarm is armed while the lesson waits")
        t.eq(b.wake_cause(), "alarm")
        e = entry_on(b)
        now = e.now()
        task, why = e.boot_task()
        wakes.append(now)
        if task["app_id"] != "chat":
            ran = (now, task, why)
            break
        t.true(now < FAR, "a wake at the lesson's time ran no lesson")
        t.eq(why, "not_due", "an early wake")
    t.true(ran is not None, "the lesson never ran; wakes at %r" % (wakes,))
    now, task, why = ran
    t.true(now >= FAR, "the lesson ran %d s early" % (FAR - now))
    t.eq((task["source"], task["alarm_id"], task["params"]), ("schedule", "far", LESSON["params"]))
    t.true(len(wakes) <= 3, "a wake about every four weeks, not more: %r" % (wakes,))
    t.eq(e.alarms.find("far"), None, "a one-shot alarm is gone once it ran")


def test_an_early_chip_match_wakes_nothing_and_keeps_the_lesson_waiting():
    # The chip was programmed by older firmware with the bare date match:
    # it fires on 24 March for a lesson on 24 April.
    d = state_dir("early")
    b = _fresh_board(d)
    e = entry_on(b)
    e.alarms.set({"alarm_id": "far", "at": FAR, "pending_task": LESSON}, T0)
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_alarm_once(FAR)
    rtc.enable_alarm(True)
    b = _sleep_until_alarm(b, d)
    e = entry_on(b)
    t.eq(b.wake_cause(), "alarm")
    t.true(e.now() < T0 + 10 * DAY, "the month-blind match came after 9 days")
    task, why = e.boot_task()
    t.eq((task["app_id"], why), ("chat", "not_due"))
    t.eq(e.pending()["alarm_id"], "far", "the lesson still waits for its date")
    t.true(e.alarms.find("far") is not None, "and its alarm is still set")
    wait = b.rtc_model.seconds_to_next_alarm(horizon=60 * DAY)
    t.true(wait is not None and e.now() + wait <= FAR, "re-armed for a wake no later than the lesson")


def test_the_chip_is_never_programmed_with_an_ambiguous_date():
    d = state_dir("amb")
    b = _fresh_board(d)
    e = entry_on(b)
    rtc = ds3231.DS3231(b.i2c)
    for days in (1, 27, 28, 31, 40, 59, 90, 365):
        at = T0 + days * DAY + 3600
        e.alarms.set({"alarm_id": "x", "at": at, "pending_task": LESSON}, T0)
        wait = b.rtc_model.seconds_to_next_alarm(horizon=400 * DAY)
        t.true(wait is not None, "armed for %d days" % days)
        fires = T0 + wait
        t.true(fires <= at, "%d days ahead: the chip fires after the lesson" % days)
        armed = e.alarms.armed()
        t.eq(armed["at"], at)
        t.true(abs(armed["wake"] - fires) <= 1, "%d days: armed %r, chip fires at %d" % (days, armed, fires))
        t.true(rtc.alarm_enabled(), "enabled")
