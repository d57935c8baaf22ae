# Host NVS: the esp32.NVS API over one file, with ESP-IDF's limits.
#
#   flash = NVSFlash(path)          # the "nvs" partition (one file)
#   ns = flash.open("xiaozhi")      # what esp32.NVS("xiaozhi") returns
#   ns.set_blob("k", b"..."); ns.commit()
#
# Semantics kept from ESP-IDF / esp32.NVS: keys and namespaces 1..15 chars;
# i32 range; a write replaces the old value and type; reads of a missing key
# or of the other type raise OSError(NVS_NOT_FOUND); get_blob needs a buffer
# at least as large as the blob (else NVS_INVALID_LENGTH) and returns the
# length; blob size limit 97.6 % of (partition - 4000) bytes; the partition
# fills up by 32-byte entries (126 per 4 KB page, one page kept free).
# Only commit() is durable (the documented contract); `durable_on_set=True`
# models today's IDF where every set reaches flash at once.
#
# A partition that does not read back (garbage, a truncated file, a document
# of the wrong shape) is what MicroPython's esp32 boot does with one that
# nvs_flash_init() refuses (ports/esp32/main.c): erased, with a log line, and
# the board boots on defaults. `erased` says it happened.
#
# Power cuts: die_after(n) lets n more writes (set, erase, commit) through
# and cuts the power at the next one: PowerCut is raised, nothing more is
# stored, the file keeps its last durable state.
import json
import binascii

import log
from hal import errors
from hal.host import fs

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

KEY_MAX = const(15)
PAGE = const(4096)
ENTRIES_PER_PAGE = const(126)
ENTRY = const(32)
DEFAULT_SIZE = const(0x6000)  # MicroPython's esp32 partition table


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise errors.nvs_error(errors.NVS_INVALID_NAME)
    if len(name) > KEY_MAX:
        raise errors.nvs_error(errors.NVS_KEY_TOO_LONG)


def _entries(kind, value):
    if kind == "i":
        return 1
    # blob index entry + data header entry + the data in 32-byte entries
    return 2 + (len(value) + ENTRY - 1) // ENTRY


class NVSFlash:
    def __init__(self, path, size=DEFAULT_SIZE, durable_on_set=False):
        self.path = path
        self.size = size
        self.durable_on_set = durable_on_set
        self.capacity = (size // PAGE - 1) * ENTRIES_PER_PAGE
        self.max_blob = min(508000, int((size - 4000) * 0.976))
        self._writes_left = None
        self.dead = False
        self.writes = 0  # every set/erase/commit so far (for power-cut tests)
        self.erased = False
        try:
            self._live = self._load()
        except Exception as e:  # any garbage at all: the board must still boot
            log.get("nvs").error("NVS partition does not read back (%r): erased, booting on defaults", e)
            self._live = {}
            self._save()
            self.erased = True

    def _load(self):
        if not fs.exists(self.path):
            return {}
        doc = json.loads(fs.read_bytes(self.path).decode())
        live = {}
        for ns, keys in doc.items():
            _check_name(ns)
            d = live[ns] = {}
            for k, (kind, v) in keys.items():
                _check_name(k)
                if kind == "i":
                    if not isinstance(v, int):
                        raise ValueError("i32 %s.%s is not a number" % (ns, k))
                    d[k] = (kind, v)
                elif kind == "b":
                    d[k] = (kind, binascii.unhexlify(v))
                else:
                    raise ValueError("entry %s.%s of unknown type" % (ns, k))
        return live

    def _save(self):
        doc = {}
        for ns, keys in self._live.items():
            d = doc[ns] = {}
            for k, (kind, v) in keys.items():
                d[k] = [kind, v if kind == "i" else binascii.hexlify(v).decode()]
        fs.write_atomic(self.path, json.dumps(doc).encode())

    def die_after(self, n):
        """Cut the power at the (n+1)-th write from now; None = never."""
        self._writes_left = n

    def _write_gate(self):
        if self.dead:
            raise errors.PowerCut("NVS: power is off")
        if self._writes_left is not None:
            if self._writes_left <= 0:
                self.dead = True
                raise errors.PowerCut("NVS: power cut before write %d" % (self.writes + 1))
            self._writes_left -= 1
        self.writes += 1

    def used_entries(self):
        n = 0
        for keys in self._live.values():
            n += 1  # the namespace's own entry
            for kind, v in keys.values():
                n += _entries(kind, v)
        return n

    def open(self, namespace):
        _check_name(namespace)
        return NVS(self, namespace)

    # called by NVS
    def _set(self, ns, key, kind, value):
        keys = self._live.get(ns)
        old = keys.get(key) if keys else None
        grow = _entries(kind, value) - (_entries(*old) if old else 0)
        if keys is None:
            grow += 1
        if self.used_entries() + grow > self.capacity:
            raise errors.nvs_error(errors.NVS_NOT_ENOUGH_SPACE)
        self._write_gate()
        if keys is None:
            keys = self._live[ns] = {}
        keys[key] = (kind, value)
        if self.durable_on_set:
            self._save()

    def _get(self, ns, key, kind):
        if self.dead:
            raise errors.PowerCut("NVS: power is off")
        item = self._live.get(ns, {}).get(key)
        if item is None or item[0] != kind:
            raise errors.nvs_error(errors.NVS_NOT_FOUND)
        return item[1]

    def _erase(self, ns, key):
        keys = self._live.get(ns)
        if not keys or key not in keys:
            raise errors.nvs_error(errors.NVS_NOT_FOUND)
        self._write_gate()
        del keys[key]
        if self.durable_on_set:
            self._save()

    def _commit(self):
        self._write_gate()
        self._save()


class NVS:
    """One namespace; the same methods and errors as esp32.NVS."""

    def __init__(self, flash, namespace):
        self._flash = flash
        self._ns = namespace

    def set_i32(self, key, value):
        _check_name(key)
        value = int(value)
        if not -0x80000000 <= value <= 0x7FFFFFFF:
            raise OverflowError("value does not fit in 32 bits")
        self._flash._set(self._ns, key, "i", value)

    def get_i32(self, key):
        _check_name(key)
        return self._flash._get(self._ns, key, "i")

    def set_blob(self, key, value):
        _check_name(key)
        if isinstance(value, str):
            value = value.encode()
        value = bytes(value)
        if len(value) > self._flash.max_blob:
            raise errors.nvs_error(errors.NVS_VALUE_TOO_LONG)
        self._flash._set(self._ns, key, "b", value)

    def get_blob(self, key, buf):
        _check_name(key)
        blob = self._flash._get(self._ns, key, "b")
        n = len(blob)
        if n > len(buf):
            raise errors.nvs_error(errors.NVS_INVALID_LENGTH)
        buf[:n] = blob
        return n

    def erase_key(self, key):
        _check_name(key)
        self._flash._erase(self._ns, key)

    def commit(self):
        self._flash._commit()
