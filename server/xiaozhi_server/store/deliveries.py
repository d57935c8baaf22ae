"""The delivery of each schedule to its device, claimed by one node at a
time (`store.deliveries`, on the store's connection and worker thread).

A schedule whose SET_ALARM / UNSET_ALARM is owed has `due_at` set: a
parent's write makes it due at once (a new request), and a re-send round
(the broker came back, the device reported while something it never acked
waits) makes the unacked ones due again, as the same request. A node
sends a due schedule only after claiming it:

    rows = claim_due(node_id, limit)      # FOR UPDATE SKIP LOCKED on PostgreSQL
    row = claim_one(device_id, alarm_id, node_id)
    ... publish row's SET_ALARM as row["claim_req_id"] ...
    delivered(device_id, alarm_id, req_id)    # no longer due
    release(device_id, alarm_id, req_id)      # still due (broker away, device busy)

A claim belongs to its node while the node lives (fleet.py: a fresh
heartbeat and, on PostgreSQL, the node's session lock). A dead node's
claims are taken over with the req_id it claimed them with, which may have
reached the board already: the board runs a req_id once, so the schedule
is set once however the node died. A write to the schedule (a new
revision) drops the claim: the new version is delivered afresh.
"""
import time

from .records import Records
from .rows import schedule_of


class DeliveryRecords(Records):
    def __init__(self, connection, fleet):
        super().__init__(connection)
        self._fleet = fleet     # which nodes live: a dead node's claims are taken over

    def _claimable(self):
        return ("due_at IS NOT NULL AND due_at <= %s AND (claimed_by IS NULL OR claimed_by NOT IN (%s))"
                % (self._db.now, self._fleet.live_nodes_sql()))

    def _new_req_id(self):
        if self._db.dialect == "postgres":
            return "('r' || replace(gen_random_uuid()::text, '-', ''))"
        return "('r' || lower(hex(randomblob(16))))"

    async def claim_due(self, node_id, limit=50):
        """Claim up to `limit` due schedules for this node: their rows (as
        rows.schedule_of dicts plus claim_req_id), oldest due first. Nodes
        claiming at once get disjoint sets."""
        return await self._run(self._claim, node_id, limit, None)

    async def claim_one(self, device_id, alarm_id, node_id):
        """Claim this schedule if it is due and no live node holds it: its row, or None."""
        rows = await self._run(self._claim, node_id, 1, (device_id, alarm_id))
        return rows[0] if rows else None

    def _claim(self, node_id, limit, key):
        pick = "SELECT device_id, alarm_id FROM schedules WHERE " + self._claimable()
        args = []
        if key is not None:
            pick += " AND device_id = ? AND alarm_id = ?"
            args += list(key)
        pick += " ORDER BY due_at LIMIT ?" + self._db.skip_locked
        args.append(limit)
        with self._db.transaction():
            rows = self._db.execute(
                "UPDATE schedules SET claimed_by = ?, claim_req_id = COALESCE(claim_req_id, %s) "
                "WHERE (device_id, alarm_id) IN (%s) RETURNING *" % (self._new_req_id(), pick),
                [node_id] + args).fetchall()
            # The claimed request is the schedule's latest from now on, so its
            # ack (which may come before the publish call returns) is matched.
            for r in rows:
                self._db.execute("UPDATE schedules SET last_req_id = claim_req_id WHERE device_id = ? "
                                 "AND alarm_id = ? AND claim_req_id = ?",
                                 (r["device_id"], r["alarm_id"], r["claim_req_id"]))
        out = []
        for r in rows:
            d = schedule_of(r)
            d["claim_req_id"] = d["last_req_id"] = r["claim_req_id"]
            d["taken_over"] = r["last_req_id"] == r["claim_req_id"]
            out.append(d)
        out.sort(key=lambda d: (d["device_id"], d["created_at"]))
        return out

    async def delivered(self, device_id, alarm_id, req_id):
        """The claimed request went out: the schedule is no longer due (unless
        it was written again meanwhile, which made a new delivery due)."""
        def done():
            return self._db.execute(
                "UPDATE schedules SET due_at = NULL, claimed_by = NULL, claim_req_id = NULL "
                "WHERE device_id = ? AND alarm_id = ? AND claim_req_id = ?", (device_id, alarm_id, req_id)).rowcount
        return await self._run(done) > 0

    async def release(self, device_id, alarm_id, req_id, retry_in_s=0.0):
        """Give a claim back, due again after retry_in_s, with its req_id (it may have gone out)."""
        def give_back():
            self._db.execute("UPDATE schedules SET claimed_by = NULL, due_at = {now} + ? WHERE device_id = ? "
                             "AND alarm_id = ? AND claim_req_id = ?".format(now=self._db.now),
                             (retry_in_s, device_id, alarm_id, req_id))
        await self._run(give_back)

    async def mark_due(self, device_id=None, min_age_s=0.0, ack_lost_after_s=None):
        """Make due again every schedule of the device (or of all) whose latest
        SET_ALARM / UNSET_ALARM has no ack and went out at least min_age_s ago
        (or never): a re-send of that same request, req_id and all. Its ack
        may only be late (the broker holds the request for a board that is
        away, or the node that read the ack died before recording it): the
        board runs a req_id once, and answers the copy with the ack it gave
        (firmware app/control/control.py) unless it rebooted since: it keeps
        those acks in RAM only, and then drops the copy without a word.

        With ack_lost_after_s, a request the board cannot still be about to
        answer goes with a new req_id instead: its device reported after the
        request went out, and that report is ack_lost_after_s old. The board
        was online, so it had the request; no ack came, so the ack was lost,
        and a board that rebooted since would drop the same req_id without a
        word. Setting an alarm again sets it once (alarms are keyed by
        alarm_id). How many were made due."""
        def mark():
            lost = "0 = 1"
            args = []
            if ack_lost_after_s is not None:
                lost = ("EXISTS (SELECT 1 FROM device_states d JOIN requests r ON r.req_id = schedules.last_req_id "
                        "WHERE d.device_id = schedules.device_id AND d.received_at > r.sent_at AND d.received_at < ?)")
                args.append(time.time() - ack_lost_after_s)
            sql = ("UPDATE schedules SET due_at = %s, claim_req_id = CASE WHEN %s THEN NULL ELSE last_req_id END "
                   "WHERE state IN ('pending_ack', 'deleted') AND due_at IS NULL "
                   "AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.req_id = schedules.last_req_id "
                   "AND (r.ack IS NOT NULL OR r.sent_at > ?))" % (self._db.now, lost))
            args.append(time.time() - min_age_s)
            if device_id is not None:
                sql += " AND device_id = ?"
                args.append(device_id)
            return self._db.execute(sql, args).rowcount
        return await self._run(mark)

    async def claim_resend_round(self, device_id, interval_s):
        """True for the one node (of all that read the device's report) that
        starts its re-send round: at most one round per interval_s per device."""
        def claim():
            return self._db.execute(
                "UPDATE device_states SET resend_round_at = {now} WHERE device_id = ? AND "
                "(resend_round_at IS NULL OR resend_round_at < {now} - ?)".format(now=self._db.now),
                (device_id, interval_s)).rowcount
        return await self._run(claim) > 0

    async def due_count(self):
        """Schedules whose delivery is owed now (tests, the bench)."""
        return await self._run(lambda: self._db.execute(
            "SELECT COUNT(*) FROM schedules WHERE due_at IS NOT NULL").fetchone()[0])
