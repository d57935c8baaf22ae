# Which task the device runs after boot (DESIGN 2.4), first hit wins:
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


_NEVER_RUN = (proto.SOURCE_SCHEDULE, proto.SOURCE_DEFAULT_CHAT)


def _task(app_id, task_id, params, source, alarm_id=None):
    # The gateway's task shape, built here so a plain boot loads no gateway.
    t = {"app_id": app_id, "task_id": task_id, "params": params or {}, "source": source}
    if alarm_id is not None:
        t["alarm_id"] = alarm_id
    return t


def _is_default(t):
    return t["app_id"] == proto.DEFAULT_APP_ID and t["task_id"] == proto.DEFAULT_TASK_ID


def valid(rec):
    return isinstance(rec, dict) and proto.validate("registry.pending_task", rec) is None


def resolve(wake_cause, cached, pending, alarm_task=None):
    """(task, why). cached/pending are NVS records (or None); alarm_task is
    the task of the alarm that is due now (or None)."""
    if isinstance(cached, dict) and proto.validate("mqtt.start_app_task", _strip(cached)) is None:
        return _task(cached["app_id"], cached["task_id"], cached.get("params"),
                     proto.SOURCE_MQTT_IMMEDIATE), "cached_mqtt"
    if alarm_task is not None:
        if not _is_default(alarm_task):
            return _task(alarm_task["app_id"], alarm_task["task_id"], alarm_task.get("params"),
                         proto.SOURCE_SCHEDULE, alarm_task.get("alarm_id")), "alarm"
    elif wake_cause == proto.WAKE_ALARM:
        return _task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID, {}, proto.SOURCE_DEFAULT_CHAT), "not_due"
    # Schedule and default pendings never run from here: not even validated
    # (the schema table costs the unix port's heap about 7 KB).
    if isinstance(pending, dict) and pending.get("source") not in _NEVER_RUN and valid(pending) and \
            not _is_default(pending):
        return _task(pending["app_id"], pending["task_id"], pending.get("params"),
                     pending["source"]), "pending"
    return _task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID, {}, proto.SOURCE_DEFAULT_CHAT), "default"


def _strip(rec):
    out = {}
    for k in ("app_id", "task_id", "params"):
        if k in rec:
            out[k] = rec[k]
    return out
