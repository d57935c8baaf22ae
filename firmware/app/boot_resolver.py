# Which task the device runs after boot (DESIGN 2.4), first hit wins:
#   1. a cached MQTT immediate command that has not run yet;
#   2. an alarm wake (or an alarm that fell due) with a task that is not
#      chat.conversation: the alarm's task, source schedule, no chat first;
#   3. a stored pending task of another source, else chat.conversation
#      (also on first provisioning, when NVS holds nothing at all).
# A pending task that belongs to an alarm waits for that alarm: a lesson
# set for 7:00 does not start at a 6:00 reboot.
import proto


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


def resolve(wake_cause, alarm_due, cached, pending, alarm_task=None):
    """(task, why). cached/pending are NVS records (or None), alarm_task is
    the fired alarm's task from the schedule (or None)."""
    if isinstance(cached, dict) and proto.validate("mqtt.start_app_task", _strip(cached)) is None:
        return _task(cached["app_id"], cached["task_id"], cached.get("params"),
                            proto.SOURCE_MQTT_IMMEDIATE), "cached_mqtt"
    if wake_cause == proto.WAKE_ALARM or alarm_due:
        t = alarm_task
        if t is None and valid(pending) and pending["source"] == proto.SOURCE_SCHEDULE:
            t = pending
        if t is not None and not _is_default(t):
            return _task(t["app_id"], t["task_id"], t.get("params"), proto.SOURCE_SCHEDULE,
                                t.get("alarm_id")), "alarm"
    if valid(pending) and not _is_default(pending) and \
            pending["source"] != proto.SOURCE_SCHEDULE:
        return _task(pending["app_id"], pending["task_id"], pending.get("params"),
                            pending["source"]), "pending"
    return _task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID, {}, proto.SOURCE_DEFAULT_CHAT), "default"


def _strip(rec):
    out = {}
    for k in ("app_id", "task_id", "params"):
        if k in rec:
            out[k] = rec[k]
    return out
