# Alarms set over MQTT (SET_ALARM / UNSET_ALARM), kept in NVS and served by
# DS3231 alarm 1.
#
#   al = Alarms(rtc, store, tz_offset_s)       # store: a RecordStore
#   al.set(payload, now) -> None or a refusal reason     (payload: mqtt.set_alarm)
#   al.unset(alarm_id)   -> True if it existed
#   entry = al.fired(now)  # the chip's alarm went off: the entry that is due
#
# An entry is one-shot (`at`, Unix seconds) or repeating (`time` "HH:MM"
# local time, optional `days` 1=Mon..7=Sun, every day without). Only one
# time can be in the chip: after every change the next due entry is
# programmed as a date+time match (set_alarm_once) and recorded as
# "armed". The chip's date match ignores the month, so an alarm more than
# a month away can fire early: fired() checks the entry is really due and
# otherwise just re-arms. A one-shot entry is dropped once it fired.
#
# pending_task follows the next armed entry (source schedule, alarm_id);
# when nothing is armed it is left as it is, so a task skipped by a
# higher-priority one stays pending. Limits: MAX_ALARMS entries.
import proto
from app import gateway

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_ALARMS = const(8)
DAY = const(86400)
EARLY_S = const(60)   # an alarm within this of its time counts as due
REC_ALARMS = "alarms"
REC_ARMED = "armed"
REC_PENDING = "pending"


def parse_hhmm(text):
    h, m = text.split(":")
    h = int(h)
    m = int(m)
    if not (0 <= h < 24 and 0 <= m < 60):
        raise ValueError("time %r is not HH:MM" % (text,))
    return h, m


def next_due(entry, now, tz_offset_s=0):
    """Unix seconds of the entry's next time strictly after `now`, or None."""
    if "at" in entry:
        return entry["at"] if entry["at"] > now else None
    h, m = parse_hhmm(entry["time"])
    days = entry.get("days")
    local = now + tz_offset_s
    day = local // DAY
    for i in range(8):
        d = day + i
        t = d * DAY + h * 3600 + m * 60
        if t <= local:
            continue
        if days and ((d + 3) % 7 + 1) not in days:   # ISO weekday of day number d
            continue
        return t - tz_offset_s
    return None


def next_alarm(entries, now, tz_offset_s=0):
    """(time, entry) of the soonest entry, or (None, None)."""
    best, best_e = None, None
    for e in entries:
        t = next_due(e, now, tz_offset_s)
        if t is not None and (best is None or t < best):
            best, best_e = t, e
    return best, best_e


def pending_for(entry, now):
    tk = entry["task"]
    return proto.pending_task(tk["app_id"], tk["task_id"], proto.SOURCE_SCHEDULE, now,
                              params=tk.get("params") or {}, alarm_id=entry["alarm_id"])


def default_pending(now):
    return proto.pending_task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID,
                              proto.SOURCE_DEFAULT_CHAT, now, params={})


class Alarms:
    def __init__(self, rtc, store, tz_offset_s=0, pending_store=None):
        self._rtc = rtc
        self._store = store                       # schedule + armed (bigger records)
        self._pending = pending_store or store    # pending_task
        self.tz = tz_offset_s
        rec = store.get(REC_ALARMS)
        self.entries = rec["list"] if isinstance(rec, dict) and isinstance(rec.get("list"), list) else []

    def _save(self):
        self._store.put(REC_ALARMS, {"list": self.entries})

    def find(self, alarm_id):
        for e in self.entries:
            if e["alarm_id"] == alarm_id:
                return e
        return None

    def set(self, payload, now):
        """Store and arm an alarm; a refusal reason string, or None when done."""
        e = {"alarm_id": payload["alarm_id"], "task": payload["pending_task"]}
        if "at" in payload:
            if payload["at"] <= now:
                return "at %d is not in the future (device time %d)" % (payload["at"], now)
            e["at"] = payload["at"]
        else:
            try:
                parse_hhmm(payload["time"])
            except ValueError as err:
                return str(err)
            e["time"] = payload["time"]
            if payload.get("days"):
                e["days"] = payload["days"]
        old = self.find(e["alarm_id"])
        if old is not None:
            self.entries.remove(old)
        elif len(self.entries) >= MAX_ALARMS:
            return "at most %d alarms" % MAX_ALARMS
        self.entries.append(e)
        self._save()
        self.arm(now)
        return None

    def unset(self, alarm_id, now):
        e = self.find(alarm_id)
        if e is None:
            return False
        self.entries.remove(e)
        self._save()
        p = self._pending.get(REC_PENDING)
        if isinstance(p, dict) and p.get("alarm_id") == alarm_id:
            self._pending.put(REC_PENDING, default_pending(now))
        self.arm(now)
        return True

    def arm(self, now):
        """Program the chip with the next due entry (or switch it off)."""
        t, e = next_alarm(self.entries, now, self.tz)
        if e is None:
            self._rtc.enable_alarm(False)
            self._rtc.clear_alarm()
            self._store.delete(REC_ARMED)
            return None
        self._rtc.clear_alarm()
        self._rtc.set_alarm_once(t)
        self._rtc.enable_alarm(True)
        self._store.put(REC_ARMED, {"alarm_id": e["alarm_id"], "at": t})
        p = self._pending.get(REC_PENDING)
        want = pending_for(e, now)
        if not isinstance(p, dict) or p.get("alarm_id") != e["alarm_id"] or \
                p.get("app_id") != want["app_id"] or p.get("task_id") != want["task_id"] or \
                p.get("params") != want["params"]:
            self._pending.put(REC_PENDING, want)
        return t

    def armed(self):
        return self._store.get(REC_ARMED)

    def fired(self, now):
        """The chip's alarm went off: the due entry (dropped if one-shot), or
        None when it was early or unknown. Re-arms the chip either way."""
        a = self.armed()
        e = self.find(a["alarm_id"]) if isinstance(a, dict) else None
        if e is None or a["at"] - now > EARLY_S:
            self.arm(now)
            return None
        if "at" in e:
            self.entries.remove(e)
            self._save()
        self.arm(max(now, a["at"]))
        return e

    def task_of(self, entry):
        tk = entry["task"]
        return gateway.task(tk["app_id"], tk["task_id"], tk.get("params"), proto.SOURCE_SCHEDULE,
                            entry["alarm_id"])
