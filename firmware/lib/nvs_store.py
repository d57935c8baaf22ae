# JSON records in NVS that survive a power cut at any instant.
#
# Each record `name` owns three keys in its namespace:
#   name.0, name.1  two slots holding the JSON bytes
#   name.g          i32 generation; the live slot is generation % 2
# put() writes the new JSON into the slot that is NOT live, commits, reads
# it back and checks it parses, and only then bumps the generation (one i32
# write, atomic in NVS) and commits. A power cut before the bump leaves the
# old record live, after it the new one: never a half-written record.
#
# A record is a JSON object: a slot that does not decode to one (flash
# garbage, a value written by other firmware) is treated as absent, with a
# log line, on the board as on the host; the next put() replaces it.
#
# Limits: record names 1..13 chars (the key suffix needs 2 of NVS's 15);
# a record's JSON must fit `max_bytes` (the read buffer is preallocated).
import json

import log
from hal import errors

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

NAME_MAX = const(13)
DEFAULT_MAX_BYTES = const(1024)


class StoreError(Exception):
    pass


class RecordStore:
    def __init__(self, nvs, max_bytes=DEFAULT_MAX_BYTES):
        self._nvs = nvs
        self._buf = bytearray(max_bytes)
        self._mv = memoryview(self._buf)
        self.max_bytes = max_bytes

    def _keys(self, name):
        if not name or len(name) > NAME_MAX:
            raise StoreError("record name must be 1..%d chars" % NAME_MAX)
        return name + ".0", name + ".1", name + ".g"

    def _generation(self, gkey):
        try:
            return self._nvs.get_i32(gkey)
        except OSError as e:
            if errors.is_not_found(e):
                return None
            raise

    def _read_slot(self, key):
        """The record in one slot, or None when missing or unreadable."""
        try:
            n = self._nvs.get_blob(key, self._buf)
        except OSError as e:
            if not errors.is_not_found(e):   # larger than any record we write
                log.get("nvs").warn("record slot %s unreadable (%r): treated as absent", key, e)
            return None
        try:
            rec = json.loads(bytes(self._mv[:n]))
        except (ValueError, UnicodeError):   # MicroPython: ValueError; CPython: UnicodeDecodeError too
            rec = None
        if not isinstance(rec, dict):
            log.get("nvs").warn("record slot %s does not decode to a record: treated as absent", key)
            return None
        return rec

    def get(self, name, default=None):
        k0, k1, gkey = self._keys(name)
        g = self._generation(gkey)
        if g is None:
            return default
        live, other = (k0, k1) if g % 2 == 0 else (k1, k0)
        rec = self._read_slot(live)
        if rec is None:
            # Cannot happen with atomic blob writes, but a record that was
            # fully written to the other slot is still a real record.
            rec = self._read_slot(other)
        return default if rec is None else rec

    def has(self, name):
        """Whether the record exists, without reading it (no JSON, no buffer)."""
        return self._generation(self._keys(name)[2]) is not None

    def put(self, name, record):
        k0, k1, gkey = self._keys(name)
        data = json.dumps(record).encode()
        if len(data) > self.max_bytes:
            raise StoreError("record %s is %d bytes, limit %d" % (name, len(data), self.max_bytes))
        g = self._generation(gkey)
        new_g = 0 if g is None else (g + 1) & 0x3FFFFFFF
        slot = k0 if new_g % 2 == 0 else k1
        self._nvs.set_blob(slot, data)
        self._nvs.commit()
        # Verify before switching: the pointer must never name a bad slot.
        n = self._nvs.get_blob(slot, self._buf)
        if n != len(data) or bytes(self._mv[:n]) != data:
            raise StoreError("record %s did not read back; old record kept" % name)
        json.loads(data)
        self._nvs.set_i32(gkey, new_g)
        self._nvs.commit()

    def delete(self, name):
        """Forget the record: erasing the generation key is the atomic step."""
        k0, k1, gkey = self._keys(name)
        for key in (gkey, k0, k1):
            try:
                self._nvs.erase_key(key)
            except OSError as e:
                if not errors.is_not_found(e):
                    raise
        self._nvs.commit()
