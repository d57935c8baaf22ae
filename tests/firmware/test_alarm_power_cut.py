# The plug pulled at 1 000 random points while alarms are set, removed and
# fired on the simulated board (host NVS with its power cut, the DS3231
# register model that keeps its registers on the battery, the entry's own
# boot path). After every cut the next boot must leave one consistent
# state: the table is the old or the new one (the new one whenever the
# change's journal was whole), the chip, "armed" and pending_task follow
# the table, no journal is left, and no lesson runs before its time or
# twice.
import t
import hal.host
from hal import civil, errors
import ds3231
import nvs_store
from app.entry import alarms
from test_alarm_dates import entry_on, state_dir, LESSON

DAY = 86400
CUTS = 1000
T0 = civil.to_epoch(2026, 1, 30, 6, 0, 0)
LESSON2 = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson2.mp3"}}


class Rand:
    """The same numbers on both interpreters."""

    def __init__(self, seed):
        self.s = seed

    def below(self, n):
        self.s = (self.s * 1103515245 + 12345) & 0x7FFFFFFF
        return (self.s >> 8) % n


def _key(entries):
    return sorted([(e["alarm_id"], e.get("at") or 0, e.get("time") or "", e["task"]["params"]["name"])
                   for e in entries])


def _last_occurrence(e, now):
    """The entry's latest time at or before now (None: it has none yet)."""
    if "at" in e:
        return e["at"] if e["at"] <= now else None
    last, x = None, now - 8 * DAY
    while True:
        n = alarms.next_due(e, x)
        if n is None or n > now:
            return last
        last, x = n, n


class World:
    def __init__(self):
        self.d = state_dir("cut")
        self.rand = Rand(20260130)
        self.ran = {}          # (alarm_id, occurrence) of every lesson that ran
        self.seen = {}         # alarm_id -> entry, for one-shots that left the table
        self.seq = 0
        self.figures = {"cut_in_set": 0, "cut_in_unset": 0, "cut_in_fire": 0, "old_table": 0,
                        "new_table": 0, "journal_rolled_forward": 0, "lessons": 0,
                        "wakes_before_time": 0, "boots": 0}

    def lesson_ran(self, e, now):
        occ = _last_occurrence(e, now)
        t.true(occ is not None, "%s ran at %d before its time: %r" % (e["alarm_id"], now, e))
        k = (e["alarm_id"], occ)
        t.true(k not in self.ran, "%s ran twice for %d" % k)
        self.ran[k] = True
        self.figures["lessons"] += 1

    def check(self, b, e):
        """Table, chip, armed and pending agree; no journal is left."""
        st = nvs_store.RecordStore(b.nvs("xzalarms"), 2048)
        t.eq(st.get("journal"), None, "journal left")
        rec = st.get("alarms")
        entries = rec["list"] if rec else []
        t.eq(_key(entries), _key(e.alarms.entries), "table in NVS and in memory")
        now = e.now()
        when, nxt = alarms.next_alarm(entries, now)
        rtc = ds3231.DS3231(b.i2c)
        armed = st.get("armed")
        pending = e.pending()
        if nxt is None:
            t.true(not rtc.alarm_enabled(), "chip armed with nothing due")
            t.eq(armed, None, "armed")
            t.true(pending is None or (pending["app_id"], pending["source"]) == ("chat", "default_chat"),
                   "pending %r with no alarm" % (pending,))
            return
        t.true(rtc.alarm_enabled() and not rtc.alarm_fired(), "chip armed, INT released")
        t.true(armed is not None, "nothing armed for %r" % (nxt,))
        t.eq((armed["alarm_id"], armed["at"]), (nxt["alarm_id"], when), "armed")
        wait = b.rtc_model.seconds_to_next_alarm(horizon=40 * DAY)
        t.true(wait is not None and abs(now + wait - armed["wake"]) <= 1 and armed["wake"] <= when,
               "the chip fires in %r s for %r at %d" % (wait, armed, now))
        t.true(alarms.same_task(pending, alarms.pending_for(nxt, now)), "pending %r for %r" % (pending, nxt))

    def boot(self, advance):
        b = hal.host.board(self.d, exit_fn=lambda code: None, advance=advance)
        journal = nvs_store.RecordStore(b.nvs("xzalarms"), 2048).get("journal")
        e = entry_on(b)
        now = e.now()
        task, why = e.boot_task()
        self.figures["boots"] += 1
        gone = None     # a one-shot whose lesson this boot ran has left the table
        if why == "alarm":
            ran = e.alarms.find(task["alarm_id"])
            if ran is None:
                ran = gone = self.seen[task["alarm_id"]]
            self.lesson_ran(ran, now)
        elif why == "not_due":
            self.figures["wakes_before_time"] += 1
        return b, e, journal, gone

    def op(self, b, e):
        """One random change: (kind, the table it should leave)."""
        r = self.rand
        al = e.alarms
        now = e.now()
        table = list(al.entries)
        k = r.below(10)
        if k < 4:
            self.seq += 1
            if r.below(3):
                p = {"alarm_id": "o%d" % self.seq,
                     "at": now + 60 + r.below(3) * 3600 + r.below(2) * 29 * DAY + r.below(600)}
            else:
                p = {"alarm_id": "d%d" % r.below(3), "time": "%02d:%02d" % (r.below(24), r.below(4) * 15)}
            p["pending_task"] = LESSON if r.below(2) else LESSON2
            new = dict(p)
            new["task"] = new.pop("pending_task")
            if "at" in p:
                self.seen[p["alarm_id"]] = new
            after = [x for x in table if x["alarm_id"] != p["alarm_id"]]
            if len(after) < alarms.MAX_ALARMS:
                after.append(new)
            else:
                after = table           # refused: the table is full
            return "set", after, lambda: al.set(p, now)
        if k < 7:
            ids = [x["alarm_id"] for x in table] + ["never-set"]
            aid = ids[r.below(len(ids))]
            return "unset", [x for x in table if x["alarm_id"] != aid], lambda: al.unset(aid, now)
        wait = b.rtc_model.seconds_to_next_alarm(horizon=40 * DAY)
        if wait is None:
            return None, table, None
        b.clock.warp(wait + 1)
        now = e.now()
        armed = al.armed()
        due = al.find(armed["alarm_id"]) if armed and armed["at"] <= now else None
        after = [x for x in table if not (due is not None and "at" in due and x is due)]

        def fire():
            got = al.fired(now)
            if got is not None:
                self.lesson_ran(got, now)
        return "fire", after, fire


def test_a_thousand_power_cuts_leave_alarms_consistent():
    w = World()
    b = hal.host.board(w.d, exit_fn=lambda code: None)
    ds3231.DS3231(b.i2c).set_time(T0)
    b.power.standby("power_off")
    cuts = 0
    cut = None      # (table before, table after) of the change the plug cut
    advance = 0
    while True:
        b, e, journal, gone = w.boot(advance)
        if cut is not None:
            got = _key(e.alarms.entries)
            before, after = cut
            if gone is not None:
                before = [x for x in before if x[0] != gone["alarm_id"]]
                after = [x for x in after if x[0] != gone["alarm_id"]]
            if journal is not None:
                w.figures["journal_rolled_forward"] += 1
                t.eq(got, after, "a whole journal is rolled forward")
            else:
                t.true(got in (before, after), "the table is the old or the new one: %r" % (got,))
            w.figures["new_table" if got == after and got != before else "old_table"] += 1
        w.check(b, e)
        if cuts == CUTS:
            break
        cut = None
        for _ in range(4):
            kind, after, run = w.op(b, e)
            if run is None:
                continue
            before = _key(e.alarms.entries)
            b.nvs_flash.die_after(w.rand.below(24))
            try:
                run()
            except errors.PowerCut:
                cuts += 1
                w.figures["cut_in_" + kind] += 1
                cut = (before, _key(after))
                break
            b.nvs_flash.die_after(None)
            t.eq(_key(e.alarms.entries), _key(after), "the change was made")
            w.check(b, e)
        if cut is None:
            b.power.standby("power_off")   # asleep; an alarm may wake it
            wait = b.rtc_model.seconds_to_next_alarm(horizon=40 * DAY)
            advance = wait + 1 if wait is not None and w.rand.below(2) else w.rand.below(3) * 3600
        else:
            advance = w.rand.below(3) * 1800
    print("1000 power cuts: %r" % (w.figures,))


def _two_alarms(d):
    b = hal.host.board(d, exit_fn=lambda code: None)
    ds3231.DS3231(b.i2c).set_time(T0)          # 06:00
    e = entry_on(b)
    e.alarms.set({"alarm_id": "seven", "at": T0 + 3600, "pending_task": LESSON}, T0)
    e.alarms.set({"alarm_id": "eight", "at": T0 + 7200, "pending_task": LESSON2}, T0)
    return b, e


def test_every_cut_while_deleting_an_alarm_ends_with_it_deleted_and_no_early_lesson():
    d = state_dir("del")
    b, e = _two_alarms(d)
    before = b.nvs_flash.writes
    e.alarms.unset("seven", T0)
    points = b.nvs_flash.writes - before
    t.true(points >= 10, "deleting takes %d writes" % points)
    deleted_at_boot = 0
    for n in range(points):
        t.rmtree_contents(d)
        b, e = _two_alarms(d)
        b.nvs_flash.die_after(n)
        t.raises(errors.PowerCut, e.alarms.unset, "seven", T0)
        b = hal.host.board(d, exit_fn=lambda code: None, advance=60)
        e = entry_on(b)
        task, why = e.boot_task()
        t.eq(why, "default", "cut %d: the boot" % n)
        deleted_at_boot += e.alarms.find("seven") is None
        # The parents' server sends the delete again: it converges either way.
        e.alarms.unset("seven", e.now())
        t.eq([x["alarm_id"] for x in e.alarms.entries], ["eight"], "cut %d" % n)
        t.eq(e.pending()["alarm_id"], "eight", "cut %d: pending" % n)
        b.power.standby("power_off")
        b = hal.host.board(d, exit_fn=lambda code: None,
                           advance=b.rtc_model.seconds_to_next_alarm() + 1)
        e = entry_on(b)
        task, why = e.boot_task()
        t.eq((why, task["alarm_id"]), ("alarm", "eight"), "cut %d: the next wake" % n)
        t.true(e.now() >= T0 + 7200, "cut %d: eight's lesson ran %d s early" % (n, T0 + 7200 - e.now()))
    print("deleting an alarm: %d cut points, %d of them deleted by the next boot alone" % (
        points, deleted_at_boot))
