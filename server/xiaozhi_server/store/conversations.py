"""Each device's conversation, kept so it goes on where the device
reconnects: another node, or the same one after a restart (`store.conversations`,
on the store's connection and worker thread; the table is migration 7
in schema.py).

    conversations  device_id, keep (1, or 0: the parents opted out),
                   turns (JSON: the chat messages, bounded by the session
                   before it saves), turn_count, app_id, task_id,
                   app_state (JSON: the task's params and source),
                   updated_at (the database's clock)

This is a child's words: it is kept only as long as the caller's max_age_s
(conversation.keep_hours), older ones are neither read nor kept (purge),
a device whose parents opted out has nothing stored (its row keeps only
keep = 0), and forget_conversation() removes every trace of the device here.
Saves are single statements, so nodes writing at once never mix turns of
two saves: the last save wins, which is the device's latest turn (one
device talks to one node at a time).
"""
import json

from .records import Records


def _context(row):
    return {"turns": json.loads(row["turns"]) if row["turns"] else [],
            "app_id": row["app_id"], "task_id": row["task_id"],
            "app_state": json.loads(row["app_state"]) if row["app_state"] else {},
            "updated_at": row["updated_at"]}


class ConversationRecords(Records):
    keep_by_default = True     # conversation.keep_by_default: what a device whose parents chose nothing gets

    async def load_conversation(self, device_id, max_age_s):
        """The device's kept conversation ({"turns": [...], "app_id",
        "task_id", "app_state", "updated_at"}), or None: none kept, opted
        out, or older than max_age_s."""
        def read():
            return self._db.execute(
                "SELECT * FROM conversations WHERE device_id = ? AND keep = 1 AND turns IS NOT NULL "
                "AND updated_at > {now} - ?".format(now=self._db.now), (device_id, max_age_s)).fetchone()
        row = await self._run(read)
        return _context(row) if row else None

    async def save_conversation(self, device_id, context):
        """Keep the device's conversation as it is now (replacing the last
        one), unless its parents opted out: True when kept."""
        turns = context.get("turns") or []
        count = sum(1 for m in turns if m.get("role") == "user")
        values = (json.dumps(turns, ensure_ascii=False), count, context.get("app_id"), context.get("task_id"),
                  json.dumps(context.get("app_state") or {}, ensure_ascii=False))

        def write():
            with self._db.transaction():
                done = self._db.execute(
                    "UPDATE conversations SET turns = ?, turn_count = ?, app_id = ?, task_id = ?, app_state = ?, "
                    "updated_at = {now} WHERE device_id = ? AND keep = 1".format(now=self._db.now),
                    values + (device_id,)).rowcount
                if done or not self.keep_by_default:
                    return done
                # No row yet: the default applies (a row with keep = 0 is left alone).
                return self._db.execute(
                    "INSERT INTO conversations (device_id, keep, turns, turn_count, app_id, task_id, app_state, "
                    "updated_at) VALUES (?, 1, ?, ?, ?, ?, ?, {now}) ON CONFLICT (device_id) DO NOTHING"
                    .format(now=self._db.now), (device_id,) + values).rowcount
        return await self._run(write) > 0

    async def end_kept_task(self, device_id, name=None):
        """The device's lesson ended (its `player_done` report): the kept
        conversation keeps its turns but no longer the task, when that task
        played `name` (or named no file). True when a task was ended."""
        def write():
            with self._db.transaction():
                row = self._db.execute("SELECT app_state FROM conversations WHERE device_id = ? "
                                       "AND app_id IS NOT NULL", (device_id,)).fetchone()
                if row is None:
                    return 0
                params = (json.loads(row["app_state"]) if row["app_state"] else {}).get("params") or {}
                if name is not None and params.get("name") not in (None, name):
                    return 0    # a later lesson is kept: that one plays on
                return self._db.execute("UPDATE conversations SET app_id = NULL, task_id = NULL, app_state = NULL "
                                        "WHERE device_id = ?", (device_id,)).rowcount
        return await self._run(write) > 0

    async def conversation_setting(self, device_id, max_age_s):
        """{"keep": bool, "turns": n}: whether the device's conversation is
        kept, and how many of the child's turns are kept now."""
        def read():
            return self._db.execute(
                "SELECT keep, CASE WHEN updated_at > {now} - ? THEN turn_count ELSE 0 END FROM conversations "
                "WHERE device_id = ?".format(now=self._db.now), (max_age_s, device_id)).fetchone()
        row = await self._run(read)
        if row is None:
            return {"keep": self.keep_by_default, "turns": 0}
        return {"keep": bool(row[0]), "turns": int(row[1] or 0)}

    async def set_conversation_keep(self, device_id, keep):
        """Keep the device's conversations from now on, or not: opting out
        erases what is kept at once."""
        def write():
            if keep:
                self._db.execute("INSERT INTO conversations (device_id, keep, turn_count) VALUES (?, 1, 0) "
                                 "ON CONFLICT (device_id) DO UPDATE SET keep = 1", (device_id,))
            else:
                self._db.execute(
                    "INSERT INTO conversations (device_id, keep, turn_count) VALUES (?, 0, 0) "
                    "ON CONFLICT (device_id) DO UPDATE SET keep = 0, turns = NULL, turn_count = 0, app_id = NULL, "
                    "task_id = NULL, app_state = NULL, updated_at = NULL", (device_id,))
        await self._run(write)

    async def erase_conversation(self, device_id):
        """Erase what is kept of the device's conversation (its setting stays):
        True when something was kept."""
        def erase():
            return self._db.execute(
                "UPDATE conversations SET turns = NULL, turn_count = 0, app_id = NULL, task_id = NULL, "
                "app_state = NULL, updated_at = NULL WHERE device_id = ? AND turns IS NOT NULL",
                (device_id,)).rowcount
        return await self._run(erase) > 0

    async def forget_conversation(self, device_id):
        """Remove everything this part of the store holds of the device (its
        conversation and its setting): for a device given up or reset."""
        def forget():
            self._db.execute("DELETE FROM conversations WHERE device_id = ?", (device_id,))
        await self._run(forget)

    async def purge_conversations(self, max_age_s):
        """Erase every conversation older than max_age_s (settings stay): how many."""
        def purge():
            return self._db.execute(
                "UPDATE conversations SET turns = NULL, turn_count = 0, app_id = NULL, task_id = NULL, "
                "app_state = NULL, updated_at = NULL WHERE turns IS NOT NULL AND updated_at < {now} - ?"
                .format(now=self._db.now), (max_age_s,)).rowcount
        return await self._run(purge)
