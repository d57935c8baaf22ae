"""What the control plane checks before anything goes to a device: the
device id (it becomes part of a topic), the task against the app registry,
and the task's params against that task's own schema."""
from .. import protocol as proto
from ..errors import BadRequest

MAX_DEVICE_ID = 64


def device_id(value):
    """The device id of a path, or BadRequest: it is spliced into MQTT topics,
    so wildcards and separators would address other devices, and into the
    broker's ACL, which trims the ends of a line."""
    if not value or len(value) > MAX_DEVICE_ID:
        raise BadRequest("device_id must be 1-%d characters" % MAX_DEVICE_ID)
    for c in value:
        if c in "+#/" or c < " " or c == "\x7f":
            raise BadRequest("device_id must not contain '+', '#', '/' or control characters")
    if value != value.strip():
        raise BadRequest("device_id must not begin or end with a space")
    return text(value, "device_id")


def text(value, where):
    """value, or BadRequest naming the first string inside it that is not
    Unicode text (a lone surrogate such as \\ud800, which JSON's \\u escapes
    can carry but UTF-8 cannot store or send) or the depth it is nested past
    (the protocol's shared check, proto.json_error)."""
    err = proto.json_error(value, where)
    if err:
        raise BadRequest(err + "; send real characters")
    return value


def task(registry, app_id, task_id, params, where=""):
    """The registry's Task for app_id/task_id with params checked; BadRequest naming the field."""
    if not isinstance(app_id, str) or not app_id:
        raise BadRequest("%sapp_id is required (a string)" % where)
    if task_id is not None and not isinstance(task_id, str):
        raise BadRequest("%stask_id must be a string" % where)
    try:
        t = registry.find(app_id, task_id)
    except LookupError as e:
        field = "app_id" if app_id not in registry.apps else "task_id"
        raise BadRequest("%s%s: %s" % (where, field, e))
    if t.reserved:
        raise BadRequest("%stask_id: %s is not available yet" % (where, t.key))
    if params is not None and not isinstance(params, dict):
        raise BadRequest("%sparams must be an object" % where)
    err = proto.validate_against(t.params_schema, params or {}, where + "params")
    if err:
        raise BadRequest(err)
    return t
