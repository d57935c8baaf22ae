# Host NVS keeps esp32.NVS's semantics and limits, and models power cuts.
import t
import hal.host  # noqa: F401  (puts the frozen asyncio back on MicroPython)
from hal import errors
from hal.host.nvs import NVSFlash


def _flash(**kw):
    return NVSFlash(t.tmpdir("nvs") + "/nvs.json", **kw)


def _code(exc):
    return exc.args[0]


def test_i32_roundtrip_and_only_commit_is_durable():
    f = _flash()
    ns = f.open("xiaozhi")
    ns.set_i32("vol", -7)
    t.eq(ns.get_i32("vol"), -7)
    t.raises(OSError, NVSFlash(f.path).open("xiaozhi").get_i32, "vol")
    ns.commit()
    t.eq(NVSFlash(f.path).open("xiaozhi").get_i32("vol"), -7)


def test_missing_key_and_wrong_type_raise_not_found():
    ns = _flash().open("a")
    t.eq(_code(t.raises(OSError, ns.get_i32, "nope")), errors.NVS_NOT_FOUND)
    ns.set_blob("b", b"xyz")
    t.eq(_code(t.raises(OSError, ns.get_i32, "b")), errors.NVS_NOT_FOUND)
    t.eq(_code(t.raises(OSError, ns.erase_key, "nope")), errors.NVS_NOT_FOUND)
    ns.set_i32("b", 3)  # a write replaces value and type
    t.eq(ns.get_i32("b"), 3)


def test_get_blob_needs_a_buffer_as_large_as_the_blob():
    ns = _flash().open("a")
    ns.set_blob("k", b"0123456789")
    small = bytearray(9)
    t.eq(_code(t.raises(OSError, ns.get_blob, "k", small)), errors.NVS_INVALID_LENGTH)
    big = bytearray(16)
    t.eq(ns.get_blob("k", big), 10)
    t.eq(bytes(big[:10]), b"0123456789")
    ns.set_blob("s", "text")  # str is stored as a blob, like esp32.NVS
    t.eq(ns.get_blob("s", big), 4)


def test_key_and_namespace_length_limits():
    f = _flash()
    ns = f.open("n" * 15)
    ns.set_i32("k" * 15, 1)
    t.eq(_code(t.raises(OSError, ns.set_i32, "k" * 16, 1)), errors.NVS_KEY_TOO_LONG)
    t.eq(_code(t.raises(OSError, f.open, "n" * 16)), errors.NVS_KEY_TOO_LONG)
    t.raises(OverflowError, ns.set_i32, "big", 1 << 31)


def test_blob_size_limit_and_partition_full():
    f = _flash()
    ns = f.open("a")
    t.eq(f.max_blob, int((0x6000 - 4000) * 0.976))
    t.eq(_code(t.raises(OSError, ns.set_blob, "k", bytes(f.max_blob + 1))), errors.NVS_VALUE_TOO_LONG)
    i = 0
    while True:
        try:
            ns.set_blob("k%d" % i, bytes(2000))
        except OSError as e:
            t.eq(_code(e), errors.NVS_NOT_ENOUGH_SPACE)
            break
        i += 1
    t.true(5 <= i <= 10, "24 KB partition holds a handful of 2 KB blobs, held %d" % i)
    ns.erase_key("k0")  # freeing space makes room again
    ns.set_blob("again", bytes(2000))


def test_power_cut_freezes_storage_at_last_commit():
    f = _flash()
    ns = f.open("a")
    ns.set_i32("x", 1)
    ns.commit()
    f.die_after(1)
    ns.set_i32("x", 2)  # write 1 goes through (not committed)
    t.raises(errors.PowerCut, ns.commit)
    t.raises(errors.PowerCut, ns.get_i32, "x")
    t.eq(NVSFlash(f.path).open("a").get_i32("x"), 1)


def test_durable_on_set_models_immediate_flash_writes():
    f = _flash(durable_on_set=True)
    f.open("a").set_i32("x", 5)
    t.eq(NVSFlash(f.path).open("a").get_i32("x"), 5)


def test_a_partition_that_does_not_read_back_is_erased_and_the_board_boots_on_defaults():
    # ESP-IDF boots on an erased partition when nvs_flash_init refuses it
    # (MicroPython's esp32 boot erases it); the host file is that partition.
    import log
    lines = []

    class Out:
        def write(self, text):
            lines.append(text)
    for junk in (b"\x00\xffgarbage\x80", b'{"xiaozhi": {"client_id": ["b", "6162', b"[1, 2]",
                 b'{"xiaozhi": {"k": ["b", "zz"]}}', b'{"xiaozhi": {"k": ["i", "7"]}}', b'{"xiaozhi": 5}',
                 b'{"x": {"k": ["q", 1]}}', b""):
        path = t.tmpdir("junk") + "/nvs.json"
        with open(path, "wb") as f:
            f.write(junk)
        del lines[:]
        log.set_output(Out())
        try:
            f = NVSFlash(path)
        finally:
            log.set_output(None)
        t.true(f.erased, "erased: %r" % junk)
        t.true([ln for ln in lines if "erased" in ln], "a log line for %r" % junk)
        t.eq(f.used_entries(), 0, "defaults")
        again = NVSFlash(path)       # the erase is durable: the next boot reads it
        t.eq(again.erased, False, "read back after the erase")
        ns = again.open("xiaozhi")
        ns.set_i32("k", 1)
        ns.commit()
        t.eq(NVSFlash(path).open("xiaozhi").get_i32("k"), 1)
