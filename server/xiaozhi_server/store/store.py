"""The control store: the control plane's own records (schedules,
authoritative — the device's alarm is a copy; the requests sent to
devices with their acks; the last state report of each device) and its
parts, one record class per table family over the same connection:

    store.devices        devices given credentials, activation codes waiting for a parent (devices.py)
    store.deliveries     the delivery of each schedule to its device, claimed by one node (deliveries.py)
    store.fleet          what nodes share: the nodes, which node serves a device, the server secret (fleet.py)
    store.family         the name and limits a family sets per device, the child's usage per day (family.py)
    store.care           what the companion keeps and guards per child: blocked topics, safety
                         flags, privacy, transcripts, the chat app's memory (care.py)
    store.conversations  each device's conversation, so it goes on on another node (conversations.py)
    store.wake           households and the wake words their devices heard (wake.py)

    store = await Store("var/control.db").open()                 # SQLite (the default)
    store = await Store("postgresql://xz@db.lan/xiaozhi").open()  # shared by nodes

One interface, two databases (sql.py), one schema brought up to date by
numbered migrations at open (schema.py). Every call of the store and of
its parts runs on one worker thread that owns the connection
(records.py), so the event loop never waits on the database and no
connection sees two threads. With SQLite, WAL mode lets a
reader (the CLI, a backup) look while the server writes.

Writes that race are decided in the database, in one statement or one
locked transaction each, so they hold across nodes: creating a schedule
that exists, or changing one whose revision moved on, changes nothing and
says so (the API answers 409 / 412). Requests are pruned: at most
KEEP_REQUESTS per device, none older than KEEP_DAYS, except the ones a
schedule still points at and the young ones still waiting for an ack (the
API's pacing bounds how many of those a device can have).

A database that cannot be reached raises errors.StoreUnavailable (the API
answers 503); the next call connects again. A write the API acknowledged
was committed before the answer.

Schedule states:
  pending_ack  stored, SET_ALARM sent (or to be sent), no ack yet
  active       the device acked the SET_ALARM
  failed       the device refused it or failed (the ack says why)
  deleted      DELETE asked for; UNSET_ALARM sent (or to be sent)
"""
import json
import time

from . import schema, sql
from .records import Connection, Records
from .rows import schedule_of
from .conversations import ConversationRecords
from .deliveries import DeliveryRecords
from .devices import DeviceRecords
from .family import FamilyRecords
from .care import CareRecords
from .fleet import FleetRecords
from .wake import WakeRecords

PENDING_ACK = "pending_ack"
ACTIVE = "active"
FAILED = "failed"
DELETED = "deleted"

KEEP_REQUESTS = 200     # per device; enough for the API's last 10 and a few days of history
KEEP_DAYS = 30
KEEP_UNACKED_S = 600    # a request this young still waiting for its ack is never pruned
KEEP_DELETED = 20       # deleted schedules kept per device (with their UNSET_ALARM acks)
_PRUNE_EVERY = 64       # inserts between two age-based passes

_COLUMNS = ("device_id", "alarm_id", "at", "time", "days", "pending_task", "created_at", "updated_at",
            "state", "last_req_id", "revision")


def _row(s):
    return (s["device_id"], s["alarm_id"], s.get("at"), s.get("time"),
            json.dumps(s["days"]) if s.get("days") is not None else None,
            json.dumps(s["pending_task"]), s["created_at"], s["updated_at"], s["state"], s.get("last_req_id"),
            s.get("revision", 1))


def _request(row):
    return {"req_id": row["req_id"], "device_id": row["device_id"], "action": row["action"],
            "payload": json.loads(row["payload"]), "sent_at": row["sent_at"],
            "ack": json.loads(row["ack"]) if row["ack"] else None, "acked_at": row["acked_at"]}


class Store(Records):
    """The schedules, requests and state reports are its own (they change
    together: an ack sets its schedule's state, pruning keeps what a
    schedule points at); every other table family is a part on the same
    connection."""

    def __init__(self, target):
        """target: a SQLite file path (or sqlite:/// URL), or a postgresql:// URL."""
        connection = Connection(target)
        super().__init__(connection)
        self.target = connection.target
        self.path = self.target     # the name callers knew (the SQLite file)
        self.address = sql.where(self.target)
        self._inserts = 0
        self.devices = DeviceRecords(connection)
        self.fleet = FleetRecords(connection)
        self.deliveries = DeliveryRecords(connection, self.fleet)
        self.family = FamilyRecords(connection, self.fleet)
        self.care = CareRecords(connection)
        self.conversations = ConversationRecords(connection)
        self.wake = WakeRecords(connection)

    @property
    def shared(self):
        """True on PostgreSQL: other nodes may use this store at the same time."""
        return sql.is_postgres(self.target)

    @property
    def is_open(self):
        return self._db is not None

    # ---- lifecycle ----

    async def open(self):
        """Connect and migrate (once: a store already open stays as it is)."""
        if self._db is None:
            await self._run(self._open)
        return self

    def _open(self):
        db = sql.open_database(self.target)
        try:
            schema.migrate(db)
        except BaseException:
            db.close()
            raise
        db.on_connect = self.fleet.take_node_lock     # after a reconnect: the node's lock again
        self._connection.db = db
        self.care.purge_expired()      # transcripts past their retention, kept while the server was off

    async def close(self):
        await self._connection.close()

    # ---- schedules ----

    async def create_schedule(self, s, max_live=None):
        """Insert a schedule unless a live one has its alarm_id (a deleted one is
        replaced, its revision going on) or the device has max_live live ones:
        "ok", "exists" or "full". The count and the insert are one transaction
        under the device's lock, so they are one step for every other caller,
        on any node. Its delivery is due at once (deliveries.py)."""
        return await self._run(self._create_locked, s, max_live)

    def _create_locked(self, s, max_live):
        with self._db.transaction():
            self._db.lock("schedules", s["device_id"])
            return self._create_schedule(s, max_live)

    def _create_schedule(self, s, max_live):
        if max_live is not None and self._count_live(s["device_id"]) >= max_live:
            live = self._db.execute("SELECT 1 FROM schedules WHERE device_id=? AND alarm_id=? AND state != 'deleted'",
                                    (s["device_id"], s["alarm_id"])).fetchone()
            return "exists" if live else "full"
        cur = self._db.execute(
            "INSERT INTO schedules (%s, due_at) VALUES (%s, %s) ON CONFLICT (device_id, alarm_id) DO UPDATE SET "
            "at=excluded.at, time=excluded.time, days=excluded.days, pending_task=excluded.pending_task, "
            "created_at=excluded.created_at, updated_at=excluded.updated_at, state=excluded.state, "
            "last_req_id=NULL, revision=schedules.revision + 1, due_at=excluded.due_at, claimed_by=NULL, "
            "claim_req_id=NULL WHERE schedules.state = 'deleted'"
            % (", ".join(_COLUMNS), ", ".join("?" * len(_COLUMNS)), self._db.now), _row(s))
        return "ok" if cur.rowcount > 0 else "exists"

    async def replace_schedule(self, s, if_revision=None):
        """Change a live schedule's time and task (state back to pending_ack).
        With if_revision, only while the stored revision is that one. True when changed."""
        return await self._run(self._replace_schedule, s, if_revision)

    def _replace_schedule(self, s, if_revision):
        sql = ("UPDATE schedules SET at=?, time=?, days=?, pending_task=?, updated_at=?, state=?, "
               "revision=revision + 1, due_at=%s, claimed_by=NULL, claim_req_id=NULL "
               "WHERE device_id=? AND alarm_id=? AND state != 'deleted'" % self._db.now)
        r = _row(s)
        args = [r[2], r[3], r[4], r[5], time.time(), PENDING_ACK, s["device_id"], s["alarm_id"]]
        if if_revision is not None:
            sql += " AND revision=?"
            args.append(if_revision)
        return self._db.execute(sql, args).rowcount > 0

    async def mark_deleted(self, device_id, alarm_id, if_revision=None):
        """live -> deleted, once: True for the caller that made the change."""
        return await self._run(self._mark_deleted, device_id, alarm_id, if_revision)

    def _mark_deleted(self, device_id, alarm_id, if_revision):
        sql = ("UPDATE schedules SET state='deleted', updated_at=?, revision=revision + 1, due_at=%s, "
               "claimed_by=NULL, claim_req_id=NULL WHERE device_id=? AND alarm_id=? AND state != 'deleted'"
               % self._db.now)
        args = [time.time(), device_id, alarm_id]
        if if_revision is not None:
            sql += " AND revision=?"
            args.append(if_revision)
        return self._db.execute(sql, args).rowcount > 0

    def _count_live(self, device_id):
        return self._db.execute("SELECT COUNT(*) FROM schedules WHERE device_id=? AND state != 'deleted'",
                                (device_id,)).fetchone()[0]

    async def get_schedule(self, device_id, alarm_id):
        return await self._run(self._get_schedule, device_id, alarm_id)

    def _get_schedule(self, device_id, alarm_id):
        row = self._db.execute("SELECT * FROM schedules WHERE device_id=? AND alarm_id=?",
                               (device_id, alarm_id)).fetchone()
        return schedule_of(row) if row else None

    async def list_schedules(self, device_id, include_deleted=False):
        return await self._run(self._list_schedules, device_id, include_deleted)

    def _list_schedules(self, device_id, include_deleted):
        sql = "SELECT * FROM schedules WHERE device_id=?"
        if not include_deleted:
            sql += " AND state != 'deleted'"
        return [schedule_of(r) for r in self._db.execute(sql + " ORDER BY created_at, alarm_id", (device_id,))]

    async def record_miss(self, device_id, alarm_id, miss):
        """The board skipped an occurrence (it came up after the grace
        window): kept with the schedule, the last one. False when there is
        no such schedule."""
        return await self._run(self._record_miss, device_id, alarm_id, miss)

    def _record_miss(self, device_id, alarm_id, miss):
        return self._db.execute("UPDATE schedules SET missed=?, updated_at=? WHERE device_id=? AND alarm_id=?",
                                (json.dumps(miss), time.time(), device_id, alarm_id)).rowcount > 0

    async def set_schedule_state(self, device_id, alarm_id, state, last_req_id=None, only_if_req=None):
        """Change a schedule's state (and its last request). With only_if_req,
        only while that request is still the schedule's latest, so a late ack
        of a superseded request cannot overwrite a newer outcome."""
        return await self._run(self._set_schedule_state, device_id, alarm_id, state, last_req_id, only_if_req)

    def _set_schedule_state(self, device_id, alarm_id, state, last_req_id, only_if_req):
        sql = "UPDATE schedules SET state=?, updated_at=?"
        args = [state, time.time()]
        if last_req_id is not None:
            sql += ", last_req_id=?"
            args.append(last_req_id)
        sql += " WHERE device_id=? AND alarm_id=?"
        args += [device_id, alarm_id]
        if only_if_req is not None:
            sql += " AND last_req_id=?"
            args.append(only_if_req)
        return self._db.execute(sql, args).rowcount > 0

    async def unsent_schedules(self, device_id=None):
        """Schedules whose latest SET_ALARM / UNSET_ALARM has no ack (or was never
        sent), of one device or all: what to send again when it is back."""
        return await self._run(self._unsent, device_id)

    def _unsent(self, device_id):
        sql = ("SELECT s.*, r.sent_at AS last_sent_at FROM schedules s LEFT JOIN requests r "
               "ON r.req_id = s.last_req_id WHERE s.state IN ('pending_ack', 'deleted') "
               "AND (s.last_req_id IS NULL OR r.ack IS NULL)")
        args = ()
        if device_id is not None:
            sql += " AND s.device_id=?"
            args = (device_id,)
        out = []
        for r in self._db.execute(sql + " ORDER BY s.device_id, s.created_at", args):
            d = schedule_of(r)
            d["last_sent_at"] = r["last_sent_at"]
            out.append(d)
        return out

    # ---- requests and acks ----

    async def add_request(self, req_id, device_id, action, payload):
        await self._run(self._add_request, req_id, device_id, action, payload)

    def _add_request(self, req_id, device_id, action, payload):
        cur = self._db.execute("INSERT INTO requests (req_id, device_id, action, payload, created_at) "
                               "VALUES (?,?,?,?,?) ON CONFLICT (req_id) DO NOTHING",
                               (req_id, device_id, action, json.dumps(payload), time.time()))
        if cur.rowcount == 0:
            return      # a claim taken over from a node that had stored it already
        self._inserts += 1
        n = self._db.execute("SELECT COUNT(*) FROM requests WHERE device_id=?", (device_id,)).fetchone()[0]
        if n > KEEP_REQUESTS + KEEP_REQUESTS // 4:
            self._prune_device(device_id)
        if self._inserts % _PRUNE_EVERY == 0:
            self._prune_old()

    # ---- pruning ----

    _KEPT = "req_id NOT IN (SELECT last_req_id FROM schedules WHERE last_req_id IS NOT NULL)"

    def _prune_device(self, device_id):
        self._db.execute(
            "DELETE FROM requests WHERE device_id=? AND %s AND NOT (ack IS NULL AND created_at > ?) "
            "AND seq NOT IN (SELECT seq FROM requests WHERE device_id=? ORDER BY seq DESC LIMIT ?)"
            % self._KEPT, (device_id, time.time() - KEEP_UNACKED_S, device_id, KEEP_REQUESTS))
        self._db.execute(
            "DELETE FROM schedules WHERE device_id=? AND state='deleted' AND alarm_id NOT IN "
            "(SELECT alarm_id FROM schedules WHERE device_id=? AND state='deleted' "
            "ORDER BY updated_at DESC LIMIT ?)", (device_id, device_id, KEEP_DELETED))

    def _prune_old(self):
        cut = time.time() - KEEP_DAYS * 86400
        self._db.execute("DELETE FROM schedules WHERE state='deleted' AND updated_at < ?", (cut,))
        self._db.execute("DELETE FROM requests WHERE COALESCE(acked_at, sent_at, created_at, 0) < ? AND %s"
                         % self._KEPT, (cut,))

    async def mark_sent(self, req_id):
        await self._run(self._mark_sent, req_id)

    def _mark_sent(self, req_id):
        # The first time it went out: a re-send of the same request keeps it
        # (a board that reported after it must have had it: deliveries.mark_due).
        self._db.execute("UPDATE requests SET sent_at=COALESCE(sent_at, ?) WHERE req_id=?", (time.time(), req_id))

    async def get_request(self, req_id):
        return await self._run(self._get_request, req_id)

    def _get_request(self, req_id):
        row = self._db.execute("SELECT * FROM requests WHERE req_id=?", (req_id,)).fetchone()
        return _request(row) if row else None

    async def record_ack(self, req_id, ack, schedule=None):
        """Store the first ack of a request; the request (with its ack) for the
        caller that stored it, None when it is unknown or was acked already.
        Every node reads every ack: the one that stores it does what follows.
        schedule: (device_id, alarm_id, state) set in the same transaction,
        while that request is still the schedule's latest: a node that dies
        right after cannot leave an ack recorded and its schedule pending."""
        return await self._run(self._record_ack, req_id, ack, schedule)

    def _record_ack(self, req_id, ack, schedule):
        with self._db.transaction():
            cur = self._db.execute("UPDATE requests SET ack=?, acked_at=? WHERE req_id=? AND ack IS NULL",
                                   (json.dumps(ack), time.time(), req_id))
            if cur.rowcount and schedule is not None:
                device_id, alarm_id, state = schedule
                self._db.execute("UPDATE schedules SET state=?, updated_at=? WHERE device_id=? AND alarm_id=? "
                                 "AND last_req_id=?", (state, time.time(), device_id, alarm_id, req_id))
        return self._get_request(req_id) if cur.rowcount else None

    async def counts(self, device_id):
        """How many requests of the device are stored, were published, have their ack."""
        def count():
            r = self._db.execute("SELECT COUNT(*), COUNT(sent_at), COUNT(ack) FROM requests WHERE device_id=?",
                                 (device_id,)).fetchone()
            return {"requests": r[0], "sent": r[1], "acked": r[2]}
        return await self._run(count)

    async def recent_requests(self, device_id, limit=10):
        return await self._run(self._recent, device_id, limit)

    def _recent(self, device_id, limit):
        rows = self._db.execute("SELECT * FROM requests WHERE device_id=? ORDER BY seq DESC LIMIT ?",
                                (device_id, limit))
        return [_request(r) for r in rows]

    # ---- device state reports ----

    async def save_state(self, device_id, state):
        await self._run(self._save_state, device_id, state)

    def _save_state(self, device_id, state):
        self._db.execute("INSERT INTO device_states (device_id, state, received_at) VALUES (?,?,?) "
                         "ON CONFLICT (device_id) DO UPDATE SET state=excluded.state, received_at=excluded.received_at",
                         (device_id, json.dumps(state), time.time()))

    async def get_state(self, device_id):
        return await self._run(self._get_state, device_id)

    def _get_state(self, device_id):
        row = self._db.execute("SELECT * FROM device_states WHERE device_id=?", (device_id,)).fetchone()
        return {"report": json.loads(row["state"]), "received_at": row["received_at"]} if row else None
