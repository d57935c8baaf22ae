# ---- the priority table: the same decision on the board and the server ----
# Who wins when a task request arrives while another task runs: higher
# priority (SOURCE_PRIORITY, common.json) preempts, equal priority replaces
# (the last request wins), lower is refused with a reason. A task that has
# finished holds no priority: pass None as the current source.
import proto

PREEMPT = "preempt"
REPLACE = "replace"
REFUSE = "refuse"


def decide(current_source, new_source, current=None):
    """(verdict, reason) for a request from new_source while a task from
    current_source runs (None: nothing holds priority). `current` names the
    running task in the refusal (default: "a <source> task")."""
    new = proto.SOURCE_PRIORITY.get(new_source)
    if new is None:
        raise ValueError("unknown source %r" % (new_source,))
    if current_source is None:
        return PREEMPT, "nothing else is running"
    old = proto.SOURCE_PRIORITY[current_source]
    if new > old:
        return PREEMPT, "%s outranks %s" % (new_source, current_source)
    if new == old:
        return REPLACE, "same priority as %s: the last request wins" % current_source
    return REFUSE, "%s from %s is running and outranks %s" % (
        current or "a task", current_source, new_source)
