"""The store's device records (`store.devices`, on the store's connection and
worker thread; tables in schema.py): the devices that were given credentials, and the
activation codes a device shows while it waits for a parent's approval.

    devices      device_id, client_id (bound by an activation; NULL when
                 provisioned by a parent with the CLI), via, created_at
    activations  code, device_id, client_id, challenge, created_at,
                 expires_at, approved_at, source (the caller's address),
                 prefix (its device id's prefix)
    seen_devices device_id, via (how it first came: ota | websocket),
                 firmware (the version its last OTA check named),
                 first_seen_at, last_seen_at, node_id (the node holding
                 its voice session now; NULL when none)

Waiting codes are limited in all, per source address and per device-id
prefix (expired ones are dropped first; control/devices.py sets the
numbers), so OTA calls from made-up devices cannot grow the table, and one
caller cannot take every waiting place.
"""
import time
from typing import NamedTuple

from .records import Records

MAX_PENDING = 100
# Devices seen by OTA or WebSocket that the table keeps at most: made-up
# device ids in OTA checks cannot grow it without end (a known one is
# always updated).
MAX_SEEN = 10000


class ActivationLimits(NamedTuple):
    waiting: int = MAX_PENDING      # codes waiting at once, in all
    per_source: int = 10            # ... asked for from one address
    per_prefix: int = 20            # ... for device ids of one prefix


# add_activation's answers
ADDED, CODE_TAKEN, FULL, SOURCE_FULL, PREFIX_FULL = "added", "code_taken", "full", "source_full", "prefix_full"


def _evict_for(db, source):
    """The pool is full: the address holding the most waiting codes gives up
    its oldest one, when it holds more than the asker would after this code
    (so eleven addresses cannot starve a twelfth, and an address never
    evicts a smaller one's code). (source, count, device_id) of the evicted
    code, or None: every address holds as few as the asker (a true flood
    from as many addresses as places)."""
    row = db.execute("SELECT source, COUNT(*) AS n FROM activations WHERE approved_at IS NULL "
                     "AND source IS NOT NULL GROUP BY source ORDER BY n DESC, MIN(created_at) ASC LIMIT 1").fetchone()
    if row is None:
        return None
    mine = db.execute("SELECT COUNT(*) FROM activations WHERE approved_at IS NULL AND source=?",
                      (source,)).fetchone()[0] if source is not None else 0
    if row[1] <= mine + 1:
        return None
    oldest = db.execute("SELECT code, device_id FROM activations WHERE approved_at IS NULL AND source=? "
                        "ORDER BY created_at ASC LIMIT 1", (row[0],)).fetchone()
    db.execute("DELETE FROM activations WHERE code=?", (oldest[0],))
    return row[0], row[1], oldest[1]


class DeviceRecords(Records):
    # ---- devices ----

    async def device_ids(self):
        return await self._run(lambda: [r[0] for r in self._db.execute("SELECT device_id FROM devices")])

    async def get_device(self, device_id):
        def get():
            row = self._db.execute("SELECT * FROM devices WHERE device_id=?", (device_id,)).fetchone()
            return dict(row) if row else None
        return await self._run(get)

    async def add_device(self, device_id, client_id, via):
        """Record a device (a client_id given re-binds it); True when it is new."""
        def add():
            new = self._db.execute("SELECT 1 FROM devices WHERE device_id=?", (device_id,)).fetchone() is None
            self._db.execute("INSERT INTO devices (device_id, client_id, via, created_at) VALUES (?,?,?,?) "
                             "ON CONFLICT (device_id) DO UPDATE SET "
                             "client_id=COALESCE(excluded.client_id, devices.client_id)",
                             (device_id, client_id, via, time.time()))
            return new
        return await self._run(add)

    async def remove_device(self, device_id):
        """Forget a device and its activations; True when it was known."""
        def remove():
            with self._db.transaction():
                self._db.execute("DELETE FROM activations WHERE device_id=?", (device_id,))
                return self._db.execute("DELETE FROM devices WHERE device_id=?", (device_id,)).rowcount > 0
        return await self._run(remove)

    # ---- every device seen ----

    async def saw_device(self, device_id, via, firmware=None):
        """A device's OTA check or WebSocket hello: listed from now on."""
        def saw():
            now = time.time()
            if self._db.execute("SELECT 1 FROM seen_devices WHERE device_id=?", (device_id,)).fetchone() is None \
                    and self._db.execute("SELECT COUNT(*) FROM seen_devices").fetchone()[0] >= MAX_SEEN:
                return False
            self._db.execute("INSERT INTO seen_devices (device_id, via, firmware, first_seen_at, last_seen_at) "
                             "VALUES (?,?,?,?,?) ON CONFLICT (device_id) DO UPDATE SET "
                             "last_seen_at=excluded.last_seen_at, "
                             "firmware=COALESCE(excluded.firmware, seen_devices.firmware)",
                             (device_id, via, firmware, now, now))
            return True
        return await self._run(saw)

    async def set_held(self, node_id, came, left):
        """The devices whose voice session opened (came) or ended (left) on this node."""
        def put():
            now = time.time()
            with self._db.transaction():
                for device_id in came:
                    self._db.execute("INSERT INTO seen_devices (device_id, via, first_seen_at, last_seen_at, "
                                     "node_id) VALUES (?,?,?,?,?) ON CONFLICT (device_id) DO UPDATE SET "
                                     "last_seen_at=excluded.last_seen_at, node_id=excluded.node_id",
                                     (device_id, "websocket", now, now, node_id))
                for device_id in left:
                    self._db.execute("UPDATE seen_devices SET node_id=NULL, last_seen_at=? "
                                     "WHERE device_id=? AND node_id=?", (now, device_id, node_id))
        await self._run(put)

    # ---- activation codes ----

    async def activation_of(self, device_id, client_id):
        """The live (not expired) activation of this device and client, or None."""
        def get():
            row = self._db.execute("SELECT * FROM activations WHERE device_id=? AND client_id=? AND expires_at > ? "
                                   "ORDER BY created_at DESC LIMIT 1", (device_id, client_id, time.time())).fetchone()
            return dict(row) if row else None
        return await self._run(get)

    async def add_activation(self, code, device_id, client_id, challenge, ttl_s, source=None, prefix=None,
                             limits=ActivationLimits()):
        """Store a new code: ADDED (or (ADDED, (source, count, device_id)) when a full pool
        gave up another address's oldest code for it), or why not (CODE_TAKEN, FULL,
        SOURCE_FULL, PREFIX_FULL)."""
        def add():
            now = time.time()
            db = self._db
            db.execute("DELETE FROM activations WHERE expires_at <= ?", (now,))
            waiting = "SELECT COUNT(*) FROM activations WHERE approved_at IS NULL"
            if source is not None and \
                    db.execute(waiting + " AND source=?", (source,)).fetchone()[0] >= limits.per_source:
                return SOURCE_FULL
            if prefix is not None and \
                    db.execute(waiting + " AND prefix=?", (prefix,)).fetchone()[0] >= limits.per_prefix:
                return PREFIX_FULL
            evicted = None
            if db.execute(waiting).fetchone()[0] >= limits.waiting:
                evicted = _evict_for(db, source)
                if evicted is None:
                    return FULL
            cur = db.execute("INSERT INTO activations (code, device_id, client_id, challenge, created_at, "
                             "expires_at, source, prefix) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (code) DO NOTHING",
                             (code, device_id, client_id, challenge, now, now + ttl_s, source, prefix))
            if cur.rowcount == 0:
                return CODE_TAKEN
            return (ADDED, evicted) if evicted is not None else ADDED

        def add_locked():
            with self._db.transaction():
                self._db.lock("activations")    # the counts and the insert in one step, across nodes
                return add()
        return await self._run(add_locked)

    async def waiting_activations(self):
        """Codes waiting for a parent (not approved, not expired), oldest first."""
        def get():
            rows = self._db.execute("SELECT code, device_id, created_at, expires_at FROM activations "
                                    "WHERE approved_at IS NULL AND expires_at > ? ORDER BY created_at",
                                    (time.time(),))
            return [dict(r) for r in rows]
        return await self._run(get)

    async def clear_activation(self, code):
        """Forget a waiting code; False when none such waits."""
        def clear():
            with self._db.transaction():
                cur = self._db.execute("DELETE FROM activations WHERE code=? AND approved_at IS NULL "
                                       "AND expires_at > ?", (code, time.time()))
                return cur.rowcount > 0
        return await self._run(clear)

    async def approve_activation(self, code):
        """Approve a waiting code and bind its device to its client id in one
        transaction; the activation, or None (unknown, expired, already approved)."""
        def approve():
            now = time.time()
            db = self._db
            with db.transaction():
                # One conditional update decides between parents approving at once, on any node.
                row = db.execute("UPDATE activations SET approved_at=? WHERE code=? AND expires_at > ? "
                                 "AND approved_at IS NULL RETURNING *", (now, code, now)).fetchone()
                if row is None:
                    return None
                db.execute("INSERT INTO devices (device_id, client_id, via, created_at) VALUES (?,?,?,?) "
                           "ON CONFLICT (device_id) DO UPDATE SET client_id=excluded.client_id, via=excluded.via",
                           (row["device_id"], row["client_id"], "activation", now))
            return dict(row)
        return await self._run(approve)
