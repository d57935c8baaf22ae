# The task dict every entry channel hands the gateway, one shape for all:
# {"app_id", "task_id", "params", "source"} and "alarm_id" for an alarm's.
# Small on purpose: the boot order builds tasks too, and a plain boot
# loads no gateway (app/heap.py).
import proto

# NVS records of tasks (namespace "xiaozhi"): the next alarm's lesson, and an
# immediate MQTT command kept until it has run (app/control/remote.py writes
# it; a power cut or an unreachable server leaves it for the next boot).
REC_PENDING = "pending"
REC_CACHED = "mqtt_cmd"


def task(app_id, task_id, params=None, source=proto.SOURCE_VOICE, alarm_id=None):
    t = {"app_id": app_id, "task_id": task_id, "params": params or {}, "source": source}
    if alarm_id is not None:
        t["alarm_id"] = alarm_id
    return t


def default_task(source=proto.SOURCE_DEFAULT_CHAT):
    return task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID, {}, source)


def is_default(t):
    return t is not None and t["app_id"] == proto.DEFAULT_APP_ID and \
        t["task_id"] == proto.DEFAULT_TASK_ID


def key(t):
    return "%s.%s" % (t["app_id"], t["task_id"])
