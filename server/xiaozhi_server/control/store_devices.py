"""The store's device records (mixed into store.Store, same connection and
worker thread; tables in schema.py): the devices that were given credentials, and the
activation codes a device shows while it waits for a parent's approval.

    devices      device_id, client_id (bound by an activation; NULL when
                 provisioned by a parent with the CLI), via, created_at
    activations  code, device_id, client_id, challenge, created_at,
                 expires_at, approved_at

At most MAX_PENDING codes wait at once (expired ones are dropped first), so
OTA calls from made-up devices cannot grow the table.
"""
import time

MAX_PENDING = 100


class DeviceRecords:
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

    # ---- activation codes ----

    async def activation_of(self, device_id, client_id):
        """The live (not expired) activation of this device and client, or None."""
        def get():
            row = self._db.execute("SELECT * FROM activations WHERE device_id=? AND client_id=? AND expires_at > ? "
                                   "ORDER BY created_at DESC LIMIT 1", (device_id, client_id, time.time())).fetchone()
            return dict(row) if row else None
        return await self._run(get)

    async def add_activation(self, code, device_id, client_id, challenge, ttl_s):
        """Store a new code; False when the code is taken or MAX_PENDING wait already."""
        def add():
            now = time.time()
            self._db.execute("DELETE FROM activations WHERE expires_at <= ?", (now,))
            waiting = self._db.execute("SELECT COUNT(*) FROM activations WHERE approved_at IS NULL").fetchone()[0]
            if waiting >= MAX_PENDING:
                return False
            cur = self._db.execute("INSERT INTO activations (code, device_id, client_id, challenge, created_at, "
                                   "expires_at) VALUES (?,?,?,?,?,?) ON CONFLICT (code) DO NOTHING",
                                   (code, device_id, client_id, challenge, now, now + ttl_s))
            return cur.rowcount > 0

        def add_locked():
            with self._db.transaction():
                self._db.lock("activations")    # the count and the insert in one step, across nodes
                return add()
        return await self._run(add_locked)

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
