# Which task the device runs after boot (docs/entry.md, Boot order); boot()
# gathers the inputs and resolve() decides, first hit wins:
#   1. a cached MQTT immediate command that has not run yet;
#   2. an alarm whose date has come (checked against the alarm table, not
#      the chip's flag) with a task that is not chat.conversation: the
#      alarm's task, source schedule, no chat first. After a boot that is
#      not an alarm wake (the plug was pulled: the chip kept time and its
#      flag, the board could not wake) only within the grace window
#      (alarm_grace_min); a later one is skipped, logged, and reported to
#      the parents (alarm_missed), and the board boots on;
#   3. an alarm wake with no alarm due (an intermediate wake for a date
#      the chip cannot express, or a month-blind early match): "not_due",
#      the board goes back to standby;
#   4. a stored pending task of another source, else chat.conversation
#      (also on first provisioning, when NVS holds nothing at all).
# A pending task of source schedule never runs by itself: it only says
# which lesson waits for the next alarm (a lesson set for 7:00 does not
# start at a 6:00 reboot, nor at a wake a month early).
import gc

import log
import nvs_store
import proto
from app.entry.task import REC_CACHED, default_task, is_default, task


_NEVER_RUN = (proto.SOURCE_SCHEDULE, proto.SOURCE_DEFAULT_CHAT)
_log = log.get("entry")


def boot(entry):
    """(task, why) for this boot, from what the board holds: the chip's
    clock, the alarm table, the cached command, the pending record."""
    rtc, board = entry.rtc, entry.board
    # The chip is the battery-backed clock; after a battery change it
    # starts from the board clock (set from the server's time by OTA).
    if rtc.lost_power():
        rtc.set_time(entry.clock.time())
    now = rtc.time()
    cause = board.wake_cause()
    # Every boot: a change cut by a power loss is finished, the chip is
    # armed from the table again, and only an alarm whose date has come runs.
    due = None
    if _alarms_in_use(board, rtc):
        table = entry.alarm_table()
        fired = table.boot(now, None if cause == proto.WAKE_ALARM else entry.alarm_grace_s)
        if fired is not None:
            entry.bus.emit("alarm", alarm_id=fired["alarm_id"], at=now, what="fired")
            from app.entry.alarms import task_of
            due = task_of(fired)
        elif table.missed is not None:
            m = table.missed
            entry.bus.emit("alarm", alarm_id=m["alarm_id"], at=m["at"], what="missed", late_s=m["late_s"])
            entry.missed_alarms.append(m)
        entry.drop_alarms()
        gc.collect()   # room for the schema table's longest line (valid() below)
    t, why = resolve(cause, entry.records.get(REC_CACHED), entry.pending(), due)
    _log.info("boot (%s): %s.%s from %s (%s)", cause, t["app_id"], t["task_id"], t["source"], why)
    return t, why


def _alarms_in_use(board, rtc):
    # Cheap: no record read, no module loaded (a plain boot keeps its heap).
    st = nvs_store.RecordStore(board.nvs("xzalarms"), 0)
    return st.has("alarms") or st.has("journal") or st.has("armed") or \
        rtc.alarm_enabled() or rtc.alarm_fired()


def valid(rec):
    return isinstance(rec, dict) and proto.validate("registry.pending_task", rec) is None


def resolve(wake_cause, cached, pending, alarm_task=None):
    """(task, why). cached/pending are NVS records (or None); alarm_task is
    the task of the alarm that is due now (or None)."""
    if isinstance(cached, dict) and proto.validate("mqtt.start_app_task", _strip(cached)) is None:
        return task(cached["app_id"], cached["task_id"], cached.get("params"),
                    proto.SOURCE_MQTT_IMMEDIATE), "cached_mqtt"
    if alarm_task is not None:
        if not is_default(alarm_task):
            return task(alarm_task["app_id"], alarm_task["task_id"], alarm_task.get("params"),
                        proto.SOURCE_SCHEDULE, alarm_task.get("alarm_id")), "alarm"
    elif wake_cause == proto.WAKE_ALARM:
        return default_task(), "not_due"
    # Schedule and default pendings never run from here: not even validated
    # (the schema table costs the unix port's heap about 7 KB).
    if isinstance(pending, dict) and pending.get("source") not in _NEVER_RUN and valid(pending) and \
            not is_default(pending):
        return task(pending["app_id"], pending["task_id"], pending.get("params"),
                    pending["source"]), "pending"
    return default_task(), "default"


def _strip(rec):
    out = {}
    for k in ("app_id", "task_id", "params"):
        if k in rec:
            out[k] = rec[k]
    return out
