# Alarms set over MQTT (SET_ALARM / UNSET_ALARM), kept in NVS and served by
# DS3231 alarm 1.
#
#   al = Alarms(rtc, store, tz_offset_s, pending_store)   # RecordStores
#   entry = al.boot(now, grace_s)  # at boot: the journal rolled forward, the due entry or None
#   al.set(payload, now)     -> None or a refusal reason   (payload: mqtt.set_alarm)
#   al.unset(alarm_id, now)  -> True if it existed (False: it was already absent)
#   entry = al.fired(now)    # the chip's INT went low: the entry that is due, or None
#
# An entry is one-shot (`at`, Unix seconds) or repeating (`time` "HH:MM"
# local time, optional `days` 1=Mon..7=Sun, every day without).
#
# The table (record "alarms") is the truth; derive() makes the rest follow
# it: the chip (alarm 1), the record "armed" {alarm_id, at, wake} of what
# the chip waits for, and pending_task (the next armed entry's task, else
# chat). A change is one transaction: its intent goes to the record
# "journal" first, then the table, the derived state, and the journal is
# erased. Every step can be repeated, so a power cut anywhere leaves the
# old table (cut before the journal was whole) or a journal that the next
# boot applies again; and every boot derives the chip and pending again.
#
# The chip's date match has no month: a date 28 days or more ahead would
# also match the same day of an earlier month. Such an alarm arms the chip
# for an intermediate wake HORIZON_S ahead instead, and every wake checks
# the full date against "armed": a wake before its time runs nothing and
# arms the chip again. A due occurrence counts once: "armed" moves on (or
# the one-shot leaves the table) before its task runs, so a power cut can
# lose a lesson but never run it twice or early. Limits: MAX_ALARMS entries.
#
# A board whose plug was pulled cannot wake: the chip keeps time on its
# battery and its flag stays set, and the next power-on finds the
# occurrence due however late. fired(now, grace_s) runs it only within
# grace_s of its time; a later one is spent all the same (a one-shot leaves
# the table, a repeating alarm moves on) and `missed` says so, for the log
# and the parents' report. An alarm wake is on time by definition: no grace.
import log
import proto
from app.entry.task import REC_PENDING, task
from hal import civil

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_ALARMS = const(8)
DAY = const(86400)
HORIZON_S = const(2332800)     # 27 days: no day of the month comes twice within it
REC_ALARMS = "alarms"
REC_ARMED = "armed"
REC_JOURNAL = "journal"

_log = log.get("alarms")


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


def wake_for(at, now):
    """What to program into the chip for an alarm at `at`: `at` itself when
    its day of the month cannot come earlier, else an intermediate wake."""
    return at if at - now < HORIZON_S else now + HORIZON_S


def pending_for(entry, now):
    tk = entry["task"]
    return proto.pending_task(tk["app_id"], tk["task_id"], proto.SOURCE_SCHEDULE, now,
                              params=tk.get("params") or {}, alarm_id=entry["alarm_id"])


def default_pending(now):
    return proto.pending_task(proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID,
                              proto.SOURCE_DEFAULT_CHAT, now, params={})


def same_task(a, b):
    """Two pending_task records name the same task (updated_at aside)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    for k in ("app_id", "task_id", "source", "alarm_id"):
        if a.get(k) != b.get(k):
            return False
    return (a.get("params") or {}) == (b.get("params") or {})


def task_of(entry):
    """The gateway's task shape for an alarm's entry."""
    tk = entry["task"]
    return task(tk["app_id"], tk["task_id"], tk.get("params"), proto.SOURCE_SCHEDULE, entry["alarm_id"])


class Alarms:
    def __init__(self, rtc, store, tz_offset_s=0, pending_store=None):
        self._rtc = rtc
        self._store = store                       # table, armed, journal (bigger records)
        self._pending = pending_store or store    # pending_task
        self.tz = tz_offset_s
        rec = store.get(REC_ALARMS)
        self.entries = rec["list"] if isinstance(rec, dict) and isinstance(rec.get("list"), list) else []
        self.missed = None   # {alarm_id, at, late_s, grace_s}: the last occurrence skipped as too late

    def find(self, alarm_id):
        for e in self.entries:
            if e["alarm_id"] == alarm_id:
                return e
        return None

    def armed(self):
        return self._store.get(REC_ARMED)

    # ---- changes: one journaled transaction each ----

    def _apply(self, op):
        # Idempotent: applying a change twice leaves the table as once.
        e = op.get("entry")
        old = self.find(e["alarm_id"] if e else op["id"])
        if old is not None:
            self.entries.remove(old)
        if e:
            self.entries.append(e)

    def _commit(self, op, now):
        self._store.put(REC_JOURNAL, op)
        self._apply(op)
        self._store.put(REC_ALARMS, {"list": self.entries})
        self.derive(now)
        self._store.delete(REC_JOURNAL)

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
        if self.find(e["alarm_id"]) is None and len(self.entries) >= MAX_ALARMS:
            return "at most %d alarms" % MAX_ALARMS
        self._commit({"entry": e}, now)
        return None

    def unset(self, alarm_id, now):
        """Remove an alarm. Removing one that is not there changes nothing
        (a request sent again after a power cut must converge)."""
        if self.find(alarm_id) is None:
            self.derive(now)
            return False
        self._commit({"id": alarm_id}, now)
        return True

    def boot(self, now, grace_s=None):
        """At boot: roll a leftover journal forward, then treat the time as a
        wake (a due occurrence is run once, else the chip is armed again;
        one later than grace_s is skipped: `missed`)."""
        j = self._store.get(REC_JOURNAL)
        if j is not None:
            try:
                self._apply(j)
                self._store.put(REC_ALARMS, {"list": self.entries})
                _log.info("journal rolled forward: %r", j)
            except (KeyError, TypeError, AttributeError, ValueError) as err:
                _log.error("unusable journal %r dropped: %r", j, err)
        e = self.fired(now, grace_s)
        if j is not None:
            self._store.delete(REC_JOURNAL)
        return e

    # ---- the chip ----

    def _armed_entry(self, a):
        """The entry that still wants the armed occurrence, or None."""
        if not isinstance(a, dict):
            return None
        e = self.find(a.get("alarm_id"))
        if e is None or next_due(e, a["at"] - 1, self.tz) != a["at"]:
            return None
        return e

    def fired(self, now, grace_s=None):
        """A wake (INT, or the boot): the entry whose armed time has come, or
        None when it has not (an intermediate or month-blind early match)
        or came more than grace_s ago (then `missed` names it). The chip is
        armed for the next time either way."""
        self.missed = None
        a = self.armed()
        e = self._armed_entry(a)
        if e is None or a["at"] > now:
            self.derive(now)
            return None
        if "at" in e:
            self._commit({"id": e["alarm_id"]}, max(now, a["at"]))
        else:
            self._store.delete(REC_ARMED)   # this occurrence is spent
            self.derive(max(now, a["at"]))
        late = now - a["at"]
        if grace_s is not None and late > grace_s:
            self.missed = {"alarm_id": e["alarm_id"], "at": a["at"], "late_s": late, "grace_s": grace_s}
            _log.warn("alarm %s of %d skipped: the board came up %d s late (grace %d s)",
                      e["alarm_id"], a["at"], late, grace_s)
            return None
        return e

    def derive(self, now):
        """Make the chip, "armed" and pending follow the table; writes only
        what differs. An occurrence that has come but not been run yet stays
        armed for fired()."""
        a = self.armed()
        e = self._armed_entry(a)
        if e is not None and a["at"] <= now:
            want = pending_for(e, now)
        else:
            t, e = next_alarm(self.entries, now, self.tz)
            rtc = self._rtc
            if e is None:
                if rtc.alarm_enabled():
                    rtc.enable_alarm(False)
                if rtc.alarm_fired():
                    rtc.clear_alarm()
                if a is not None:
                    self._store.delete(REC_ARMED)
                want = default_pending(now)
            else:
                w = wake_for(t, now)
                if isinstance(a, dict) and a.get("alarm_id") == e["alarm_id"] and a["at"] == t and \
                        now < a.get("wake", 0) <= w:
                    w = a["wake"]           # an intermediate wake already armed stays
                _, _, d, h, mi, s, _ = civil.from_epoch(w)
                if rtc.alarm() != ("date", d, h, mi, s):
                    rtc.set_alarm_once(w)
                if rtc.alarm_fired():
                    rtc.clear_alarm()       # releases INT for the next match
                if not rtc.alarm_enabled():
                    rtc.enable_alarm(True)
                rec = {"alarm_id": e["alarm_id"], "at": t, "wake": w}
                if a != rec:
                    self._store.put(REC_ARMED, rec)
                want = pending_for(e, now)
        if not same_task(self._pending.get(REC_PENDING), want):
            self._pending.put(REC_PENDING, want)
