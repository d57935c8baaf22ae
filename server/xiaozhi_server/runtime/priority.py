"""Who wins when a new task arrives while another one runs (DESIGN §1).

Higher priority preempts, equal priority replaces (last wins), lower is
refused with a reason. A task that has finished holds no priority.
"""
from .. import protocol as proto

PREEMPT = "preempt"
REPLACE = "replace"
REFUSE = "refuse"


def priority(source):
    return proto.SOURCE_PRIORITY[source]


def decide(current_source, new_source, current_running=True):
    """(verdict, reason) for a new task from new_source."""
    if new_source not in proto.SOURCE_PRIORITY:
        raise ValueError("unknown source %r" % new_source)
    if current_source is None or not current_running:
        return PREEMPT, "nothing else is running"
    old, new = priority(current_source), priority(new_source)
    if new > old:
        return PREEMPT, "%s outranks %s" % (new_source, current_source)
    if new == old:
        return REPLACE, "same priority as %s: the last request wins" % current_source
    return REFUSE, "a %s task is running and outranks %s" % (current_source, new_source)
