"""The store's households and wake-word claims (`store.wake`, on the store's
connection and worker thread; tables in schema.py, migration 9).

    household_members  device_id (one household at most), household_id
    wake_claims        household_id, round_at, device_id, seq (1 for the round's first
                       claim, 2 for the next...), level, score, claimed_at

A round is the window a household's first claim opens: a claim made within
`window_s` of a round's start joins it, a later one opens the next. Joining
or opening is decided under the household's lock in the database, so nodes
sharing the store agree on who is in which round. Claims are kept
KEEP_CLAIMS_S, long enough for every claimant to read its round.
"""
from .records import Records

KEEP_CLAIMS_S = 60.0


def _claim(row):
    return {"device_id": row["device_id"], "seq": row["seq"], "level": row["level"], "score": row["score"],
            "claimed_at": row["claimed_at"]}


class WakeRecords(Records):
    # ---- households ----

    async def set_household(self, household_id, device_ids):
        """The household is exactly these devices (each leaves any other one);
        an empty list dissolves it."""
        def put():
            with self._db.transaction():
                self._db.lock("household", household_id)
                self._db.execute("DELETE FROM household_members WHERE household_id=?", (household_id,))
                for device_id in device_ids:
                    self._db.execute("INSERT INTO household_members (device_id, household_id) VALUES (?, ?) "
                                     "ON CONFLICT (device_id) DO UPDATE SET household_id=excluded.household_id",
                                     (device_id, household_id))
        await self._run(put)

    async def household(self, household_id):
        """The ids of the household's devices, sorted ([] when there is no such household)."""
        return await self._run(lambda: [r[0] for r in self._db.execute(
            "SELECT device_id FROM household_members WHERE household_id=? ORDER BY device_id", (household_id,))])

    async def household_of(self, device_id):
        """(household_id, how many devices it has), or None for a device in none."""
        def get():
            row = self._db.execute(
                "SELECT m.household_id, (SELECT COUNT(*) FROM household_members o "
                "WHERE o.household_id = m.household_id) AS members "
                "FROM household_members m WHERE m.device_id=?", (device_id,)).fetchone()
            return (row[0], int(row[1])) if row else None
        return await self._run(get)

    # ---- wake-word claims ----

    async def claim_wake(self, household_id, device_id, level, score, now, window_s):
        """Record that the device heard its wake word at `now`; the round it
        belongs to: {"round_at", "claims": [claims so far, first first]}."""
        def claim():
            with self._db.transaction():
                self._db.lock("wake", household_id)
                row = self._db.execute("SELECT MAX(round_at) FROM wake_claims WHERE household_id=? AND round_at > ?",
                                       (household_id, now - window_s)).fetchone()
                round_at = row[0] if row and row[0] is not None else now
                # The order of claims is the order they took the lock in, not
                # their times (two nodes' clocks, or one clock's tick, may tie).
                self._db.execute("INSERT INTO wake_claims (household_id, round_at, device_id, seq, level, score, "
                                 "claimed_at) SELECT ?, ?, ?, COUNT(*) + 1, ?, ?, ? FROM wake_claims "
                                 "WHERE household_id=? AND round_at=? "
                                 "ON CONFLICT (household_id, round_at, device_id) DO NOTHING",
                                 (household_id, round_at, device_id, level, score, now, household_id, round_at))
                self._db.execute("DELETE FROM wake_claims WHERE household_id=? AND round_at < ?",
                                 (household_id, now - KEEP_CLAIMS_S))
                return {"round_at": round_at, "claims": self._round(household_id, round_at)}
        return await self._run(claim)

    async def wake_round(self, household_id, round_at):
        """Every claim of one round, first first."""
        return await self._run(self._round, household_id, round_at)

    def _round(self, household_id, round_at):
        rows = self._db.execute("SELECT device_id, seq, level, score, claimed_at FROM wake_claims "
                                "WHERE household_id=? AND round_at=? ORDER BY seq",
                                (household_id, round_at))
        return [_claim(r) for r in rows]
