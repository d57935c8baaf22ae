"""The console's human form: one readable line per event (without --json).

    print(describe({"event": "subtitle", "role": "assistant", "text": "Hi"}))
    # assistant: Hi
"""


def describe(ev):
    kind = ev.get("event")
    if kind == "state":
        return "[state] %s" % ev.get("state")
    if kind == "subtitle":
        return "%s: %s" % ("you" if ev.get("role") == "user" else "xiaozhi", ev.get("text"))
    if kind == "emotion":
        return "[emotion] %s" % ev.get("emotion")
    if kind == "player":
        return "[player] %s %s pass=%s left=%s" % (ev.get("state"), ev.get("name"), ev.get("pass"),
                                                   ev.get("repeat_left"))
    if kind == "reply":
        return "[speaker] reply %d: %.1f s -> %s" % (ev["index"], ev.get("seconds") or 0, ev.get("wav"))
    if kind == "boot":
        return "[boot] wake cause %s, device %s" % (ev.get("wake_cause"), ev.get("device_id"))
    if kind == "error":
        return "[error] %s" % ev.get("message")
    rest = " ".join("%s=%s" % (k, v) for k, v in ev.items() if k != "event")
    return "[%s] %s" % (kind, rest)
