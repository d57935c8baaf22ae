# Which task the device runs after boot (docs/entry.md, Boot order), first hit wins:
#   1. a cached MQTT immediate command that has not run yet;
#   2. an alarm whose date has come (checked against the alarm table, not
#      the chip's flag) with a task that is not chat.conversation: the
#      alarm's task, source schedule, no chat first;
#   3. an alarm wake with no alarm due (an intermediate wake for a date
#      the chip cannot express, or a month-blind early match): "not_due",
#      the board goes back to standby;
#   4. a stored pending task of another source, else chat.conversation
#      (also on first provisioning, when NVS holds nothing at all).
# A pending task of source schedule never runs by itself: it only says
# which lesson waits for the next alarm (a lesson set for 7:00 does not
# start at a 6:00 reboot, nor at a wake a month early).
import proto
from app.entry.task import default_task, is_default, task


_NEVER_RUN = (proto.SOURCE_SCHEDULE, proto.SOURCE_DEFAULT_CHAT)


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
