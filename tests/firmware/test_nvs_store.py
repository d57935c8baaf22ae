# RecordStore: atomic replace of a JSON record, proven by cutting the power
# at every single write of a replace.
import t
import hal.host  # noqa: F401
from hal import errors
from hal.host.nvs import NVSFlash
import nvs_store

OLD = {"app_id": "chat", "task_id": "conversation", "source": "default_chat"}
OLD2 = {"app_id": "english_translation", "task_id": "live_translate", "source": "voice"}
NEW = {"app_id": "english_learning", "task_id": "repeater",
       "params": {"name": "lesson1.mp3", "repeat": 2}, "source": "schedule", "alarm_id": "a7"}


def _store(path, **kw):
    flash = NVSFlash(path, **kw)
    return flash, nvs_store.RecordStore(flash.open("xiaozhi"))


def test_put_get_and_default():
    _, s = _store(t.tmpdir("st") + "/nvs.json")
    t.eq(s.get("pending"), None)
    t.eq(s.get("pending", OLD), OLD)
    s.put("pending", OLD)
    t.eq(s.get("pending"), OLD)
    s.put("pending", NEW)
    t.eq(s.get("pending"), NEW)
    s.delete("pending")
    t.eq(s.get("pending"), None)


def test_limits():
    _, s = _store(t.tmpdir("st") + "/nvs.json")
    t.raises(nvs_store.StoreError, s.put, "a_name_too_long", OLD)
    t.raises(nvs_store.StoreError, s.put, "big", {"x": "y" * 2000})


def _writes_of_one_put(path):
    flash, s = _store(path)
    s.put("pending", OLD)
    before = flash.writes
    s.put("pending", NEW)
    return flash.writes - before


def _cut_at_every_write(durable_on_set):
    d = t.tmpdir("cut")
    total = _writes_of_one_put(d + "/probe.json")
    t.true(total >= 3, "a replace takes several writes")
    seen = []
    for n in range(total + 1):
        path = "%s/nvs%d.json" % (d, n)
        flash, s = _store(path, durable_on_set=durable_on_set)
        s.put("pending", OLD)
        s.put("pending", OLD2)  # both slots hold a record; OLD2 is the live one
        flash.die_after(n)
        try:
            s.put("pending", NEW)
            cut = False
        except errors.PowerCut:
            cut = True
        _, after = _store(path)  # next boot
        got = after.get("pending")
        t.true(got == OLD2 or got == NEW, "cut at write %d left %r" % (n, got))
        t.eq(cut, n < total, "power cut happened")
        seen.append(got == NEW)
    t.eq(seen[0], False, "a cut before any write keeps the old record")
    t.eq(seen[-1], True, "a complete replace yields the new record")


def test_power_cut_at_every_write_commit_durability():
    _cut_at_every_write(False)


def test_power_cut_at_every_write_immediate_durability():
    _cut_at_every_write(True)


class _FlakyNVS:
    """An NVS whose reads of one key come back corrupted."""

    def __init__(self, ns, bad_key):
        self._ns = ns
        self._bad = bad_key

    def __getattr__(self, name):
        return getattr(self._ns, name)

    def get_blob(self, key, buf):
        n = self._ns.get_blob(key, buf)
        if key == self._bad:
            buf[0] = 0x7E
        return n


def test_failed_verify_keeps_the_old_record():
    flash, s = _store(t.tmpdir("st") + "/nvs.json")
    s.put("pending", OLD)  # generation 0 -> slot .0; the next write goes to .1
    flaky = nvs_store.RecordStore(_FlakyNVS(flash.open("xiaozhi"), "pending.1"))
    t.raises(nvs_store.StoreError, flaky.put, "pending", NEW)
    t.eq(s.get("pending"), OLD)


def test_a_slot_that_does_not_decode_to_a_record_is_absent_and_logged():
    # Flash garbage, bytes that are not UTF-8, JSON of another shape, a blob
    # larger than any record: each reads as no record (pending_task, the
    # cached command, the alarm table), never as an exception at boot.
    import log
    lines = []
    log.set_output(_Lines(lines))
    try:
        for junk in (b"\xff\xfe\x00garbage", b'{"app_id": "chat"', b"[1, 2, 3]", b'"text"', b"\xc3\x28",
                     b"{" * 1500):
            flash, s = _store(t.tmpdir("junk") + "/nvs.json")
            ns = flash.open("xiaozhi")
            ns.set_blob("pending.0", junk)
            ns.set_i32("pending.g", 0)
            del lines[:]
            t.eq(s.get("pending", "absent"), "absent", repr(junk))
            t.true([ln for ln in lines if "treated as absent" in ln], "a log line for %r" % junk)
            s.put("pending", OLD)          # the next write replaces it
            t.eq(s.get("pending"), OLD)
    finally:
        log.set_output(None)


class _Lines:
    def __init__(self, out):
        self.out = out

    def write(self, text):
        self.out.append(text)
