"""The control plane's records in SQLite: schedules (authoritative — the
device's alarm is a copy), the requests sent to devices with their acks,
and the last state report of each device.

Every call runs on one worker thread that owns the connection, so the
event loop never waits on the disk and SQLite never sees two threads.
WAL mode lets a reader (the CLI, a backup) look while the server writes.

Schedule states:
  pending_ack  stored, SET_ALARM sent (or to be sent), no ack yet
  active       the device acked the SET_ALARM
  failed       the device refused it or failed (the ack says why)
  deleted      DELETE asked for; UNSET_ALARM sent (or to be sent)
"""
import asyncio
import json
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

PENDING_ACK = "pending_ack"
ACTIVE = "active"
FAILED = "failed"
DELETED = "deleted"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    device_id TEXT NOT NULL,
    alarm_id TEXT NOT NULL,
    at INTEGER,
    time TEXT,
    days TEXT,
    pending_task TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    state TEXT NOT NULL,
    last_req_id TEXT,
    PRIMARY KEY (device_id, alarm_id)
);
CREATE TABLE IF NOT EXISTS requests (
    req_id TEXT PRIMARY KEY,
    device_id TEXT NOT NULL,
    action TEXT NOT NULL,
    payload TEXT NOT NULL,
    sent_at REAL,
    ack TEXT,
    acked_at REAL
);
CREATE INDEX IF NOT EXISTS requests_by_device ON requests (device_id, sent_at);
CREATE TABLE IF NOT EXISTS device_states (
    device_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    received_at REAL NOT NULL
);
"""


def _schedule(row):
    d = {"device_id": row["device_id"], "alarm_id": row["alarm_id"]}
    if row["at"] is not None:
        d["at"] = row["at"]
    if row["time"] is not None:
        d["time"] = row["time"]
    if row["days"] is not None:
        d["days"] = json.loads(row["days"])
    d.update(pending_task=json.loads(row["pending_task"]), created_at=row["created_at"],
             updated_at=row["updated_at"], state=row["state"], last_req_id=row["last_req_id"])
    return d


def _request(row):
    return {"req_id": row["req_id"], "device_id": row["device_id"], "action": row["action"],
            "payload": json.loads(row["payload"]), "sent_at": row["sent_at"],
            "ack": json.loads(row["ack"]) if row["ack"] else None, "acked_at": row["acked_at"]}


class Store:
    def __init__(self, path):
        self.path = path
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="control-db")
        self._db = None

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # ---- lifecycle ----

    async def open(self):
        await self._run(self._open)
        return self

    def _open(self):
        if os.path.dirname(self.path):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        self._db = db

    async def close(self):
        if self._db is not None:
            await self._run(self._db.close)
            self._db = None
        self._pool.shutdown(wait=True)

    # ---- schedules ----

    async def save_schedule(self, s):
        """Insert or replace one schedule (the dict shape _schedule gives)."""
        await self._run(self._save_schedule, s)

    def _save_schedule(self, s):
        self._db.execute(
            "INSERT OR REPLACE INTO schedules VALUES (?,?,?,?,?,?,?,?,?,?)",
            (s["device_id"], s["alarm_id"], s.get("at"), s.get("time"),
             json.dumps(s["days"]) if s.get("days") is not None else None,
             json.dumps(s["pending_task"]), s["created_at"], s["updated_at"], s["state"], s.get("last_req_id")))

    async def get_schedule(self, device_id, alarm_id):
        return await self._run(self._get_schedule, device_id, alarm_id)

    def _get_schedule(self, device_id, alarm_id):
        row = self._db.execute("SELECT * FROM schedules WHERE device_id=? AND alarm_id=?",
                               (device_id, alarm_id)).fetchone()
        return _schedule(row) if row else None

    async def list_schedules(self, device_id, include_deleted=False):
        return await self._run(self._list_schedules, device_id, include_deleted)

    def _list_schedules(self, device_id, include_deleted):
        sql = "SELECT * FROM schedules WHERE device_id=?"
        if not include_deleted:
            sql += " AND state != 'deleted'"
        return [_schedule(r) for r in self._db.execute(sql + " ORDER BY created_at, alarm_id", (device_id,))]

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

    async def unsent_schedules(self):
        """Schedules whose latest SET_ALARM / UNSET_ALARM has no ack (or was never
        sent): what to send again when the broker or the device is back."""
        return await self._run(self._unsent)

    def _unsent(self):
        rows = self._db.execute(
            "SELECT s.* FROM schedules s LEFT JOIN requests r ON r.req_id = s.last_req_id "
            "WHERE s.state IN ('pending_ack', 'deleted') AND (s.last_req_id IS NULL OR r.ack IS NULL) "
            "ORDER BY s.device_id, s.created_at")
        return [_schedule(r) for r in rows]

    # ---- requests and acks ----

    async def add_request(self, req_id, device_id, action, payload):
        await self._run(self._add_request, req_id, device_id, action, payload)

    def _add_request(self, req_id, device_id, action, payload):
        self._db.execute("INSERT INTO requests (req_id, device_id, action, payload) VALUES (?,?,?,?)",
                         (req_id, device_id, action, json.dumps(payload)))

    async def mark_sent(self, req_id):
        await self._run(self._mark_sent, req_id)

    def _mark_sent(self, req_id):
        self._db.execute("UPDATE requests SET sent_at=? WHERE req_id=?", (time.time(), req_id))

    async def get_request(self, req_id):
        return await self._run(self._get_request, req_id)

    def _get_request(self, req_id):
        row = self._db.execute("SELECT * FROM requests WHERE req_id=?", (req_id,)).fetchone()
        return _request(row) if row else None

    async def record_ack(self, req_id, ack):
        """Store the ack of a request; the request (with its ack), or None if unknown."""
        return await self._run(self._record_ack, req_id, ack)

    def _record_ack(self, req_id, ack):
        cur = self._db.execute("UPDATE requests SET ack=?, acked_at=? WHERE req_id=?",
                               (json.dumps(ack), time.time(), req_id))
        return self._get_request(req_id) if cur.rowcount else None

    async def recent_requests(self, device_id, limit=10):
        return await self._run(self._recent, device_id, limit)

    def _recent(self, device_id, limit):
        rows = self._db.execute("SELECT * FROM requests WHERE device_id=? ORDER BY rowid DESC LIMIT ?",
                                (device_id, limit))
        return [_request(r) for r in rows]

    # ---- device state reports ----

    async def save_state(self, device_id, state):
        await self._run(self._save_state, device_id, state)

    def _save_state(self, device_id, state):
        self._db.execute("INSERT OR REPLACE INTO device_states VALUES (?,?,?)",
                         (device_id, json.dumps(state), time.time()))

    async def get_state(self, device_id):
        return await self._run(self._get_state, device_id)

    def _get_state(self, device_id):
        row = self._db.execute("SELECT * FROM device_states WHERE device_id=?", (device_id,)).fetchone()
        return {"report": json.loads(row["state"]), "received_at": row["received_at"]} if row else None
