"""What a family keeps per device for the safety filter, transcripts and
the chat app's memory (tables in schema.py, migration 6). It runs on the
control store's connection and worker thread: `store.care` is one of these.

    family_topics       device_id, topics (JSON list), redirect_line (NULL: the default), updated_at,
                        synonyms (JSON {topic: [words]}: the parent's edits; migration 10)
    family_flags        id, device_id, at, topic, child_said, reply_blocked, redirect_line, reviewed_at
    family_privacy      device_id, transcripts (0/1), retention_days, memory (0/1), updated_at
    family_transcripts  id, device_id, at, app, child, reply
    family_memory       device_id, profile (JSON), updated_at

The voice side (pipeline/care.py's CarePort) and the parents' API use
the same calls. A device with no row has the defaults: no blocked topic,
transcripts off, memory on with an empty profile. Transcripts older than
the device's retention are deleted when its turns are written or read, when
its privacy changes, for every device every PURGE_EVERY writes, and for
every device when the store opens (purge_expired).
Turning memory off erases the profile: off keeps nothing.
"""
from __future__ import annotations

import datetime
import json
import logging
import time
import uuid
from typing import Any

from ..pipeline.care import empty_profile
from .records import Records

log = logging.getLogger(__name__)

DEFAULT_PRIVACY = {"transcripts": False, "retention_days": 7, "memory": True}
KEEP_FLAGS = 500            # per device, newest kept
PURGE_EVERY = 64            # transcript writes between two purges over every device
MAX_TURNS_READ = 2000       # one day's transcript is cut there (a day of talk is far less)


def _new_id(prefix):
    return prefix + uuid.uuid4().hex[:16]


def day_bounds(date: str, tz: datetime.tzinfo) -> tuple[float, float]:
    """[start, end) of a calendar day in tz, in unix seconds."""
    d = datetime.date.fromisoformat(date)
    start = datetime.datetime(d.year, d.month, d.day, tzinfo=tz)
    return start.timestamp(), (start + datetime.timedelta(days=1)).timestamp()


class CareRecords(Records):
    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self._writes = 0

    # ---- blocked topics ----

    async def topics(self, device_id: str) -> dict:
        """{"blocked_topics": [...], "redirect_line": str | None (None: the default line),
        "synonyms": {topic: [words]} (the topics whose synonyms a parent edited)}."""
        def get():
            row = self._db.execute("SELECT topics, redirect_line, synonyms FROM family_topics WHERE device_id=?",
                                   (device_id,)).fetchone()
            if row is None:
                return {"blocked_topics": [], "redirect_line": None, "synonyms": {}}
            return {"blocked_topics": json.loads(row["topics"]), "redirect_line": row["redirect_line"],
                    "synonyms": json.loads(row["synonyms"] or "{}")}
        return await self._run(get)

    async def set_topics(self, device_id: str, topics: list[str], redirect_line: str | None,
                         synonyms: dict[str, list[str]] | None = None) -> None:
        """synonyms: the parent's edited lists (a topic left out has the built-in one)."""
        def put():
            self._db.execute("INSERT INTO family_topics (device_id, topics, redirect_line, updated_at, synonyms) "
                             "VALUES (?,?,?,?,?) ON CONFLICT (device_id) DO UPDATE SET topics=excluded.topics, "
                             "redirect_line=excluded.redirect_line, updated_at=excluded.updated_at, "
                             "synonyms=excluded.synonyms",
                             (device_id, json.dumps(topics, ensure_ascii=False), redirect_line, time.time(),
                              json.dumps(synonyms or {}, ensure_ascii=False)))
        await self._run(put)

    # ---- the safety filter's flags ----

    async def add_flag(self, device_id: str, topic: str, child_said: str, reply_blocked: str | None,
                       redirect_line: str) -> str:
        def add():
            fid = _new_id("f")
            self._db.execute("INSERT INTO family_flags (id, device_id, at, topic, child_said, reply_blocked, "
                             "redirect_line) VALUES (?,?,?,?,?,?,?)",
                             (fid, device_id, time.time(), topic, child_said, reply_blocked, redirect_line))
            self._db.execute("DELETE FROM family_flags WHERE device_id=? AND id NOT IN (SELECT id FROM "
                             "family_flags WHERE device_id=? ORDER BY at DESC LIMIT ?)",
                             (device_id, device_id, KEEP_FLAGS))
            return fid
        return await self._run(add)

    async def flags(self, device_id: str) -> list[dict]:
        """The flags not reviewed yet, newest first."""
        def get():
            rows = self._db.execute("SELECT id, at, topic, child_said, reply_blocked, redirect_line FROM "
                                    "family_flags WHERE device_id=? AND reviewed_at IS NULL ORDER BY at DESC",
                                    (device_id,))
            return [dict(r) for r in rows]
        return await self._run(get)

    async def review_flag(self, device_id: str, flag_id: str) -> bool:
        """Mark one flag reviewed; False when the device has no such flag waiting."""
        def review():
            return self._db.execute("UPDATE family_flags SET reviewed_at=? WHERE device_id=? AND id=? "
                                    "AND reviewed_at IS NULL", (time.time(), device_id, flag_id)).rowcount > 0
        return await self._run(review)

    # ---- privacy ----

    def _privacy(self, device_id):
        row = self._db.execute("SELECT transcripts, retention_days, memory FROM family_privacy WHERE device_id=?",
                               (device_id,)).fetchone()
        if row is None:
            return dict(DEFAULT_PRIVACY)
        return {"transcripts": bool(row["transcripts"]), "retention_days": row["retention_days"],
                "memory": bool(row["memory"])}

    async def privacy(self, device_id: str) -> dict:
        return await self._run(self._privacy, device_id)

    async def set_privacy(self, device_id: str, changes: dict) -> dict:
        """Change some of transcripts / retention_days / memory; the whole setting after.
        Memory turned off erases the profile; old transcripts go by the new retention."""
        def put():
            with self._db.transaction():
                self._db.lock("family_privacy", device_id)
                p = self._privacy(device_id)
                p.update(changes)
                self._db.execute(
                    "INSERT INTO family_privacy (device_id, transcripts, retention_days, memory, updated_at) "
                    "VALUES (?,?,?,?,?) ON CONFLICT (device_id) DO UPDATE SET transcripts=excluded.transcripts, "
                    "retention_days=excluded.retention_days, memory=excluded.memory, updated_at=excluded.updated_at",
                    (device_id, int(p["transcripts"]), p["retention_days"], int(p["memory"]), time.time()))
                if not p["memory"]:
                    self._db.execute("DELETE FROM family_memory WHERE device_id=?", (device_id,))
                self._purge(device_id, p["retention_days"])
            return p
        return await self._run(put)

    # ---- transcripts ----

    def _purge(self, device_id, retention_days):
        self._db.execute("DELETE FROM family_transcripts WHERE device_id=? AND at < ?",
                         (device_id, time.time() - retention_days * 86400))

    def purge_expired(self):
        """On the store's thread: every device's turns past its retention (a
        failure is logged: the next writes purge again)."""
        try:
            self._purge_all()
        except Exception as e:
            log.warning("old transcripts not purged: %s", e)

    def _purge_all(self):
        self._db.execute(
            "DELETE FROM family_transcripts WHERE at < ? - 86400 * COALESCE((SELECT p.retention_days FROM "
            "family_privacy p WHERE p.device_id = family_transcripts.device_id), ?)",
            (time.time(), DEFAULT_PRIVACY["retention_days"]))

    async def add_turn(self, device_id: str, app: str, child: str, reply: str) -> bool:
        """Keep one turn if the device's transcripts are on; True when kept."""
        def add():
            p = self._privacy(device_id)
            if not p["transcripts"]:
                return False
            self._db.execute("INSERT INTO family_transcripts (id, device_id, at, app, child, reply) "
                             "VALUES (?,?,?,?,?,?)", (_new_id("t"), device_id, time.time(), app, child, reply))
            self._purge(device_id, p["retention_days"])
            self._writes += 1
            if self._writes % PURGE_EVERY == 0:
                self._purge_all()
            return True
        return await self._run(add)

    async def turns(self, device_id: str, start: float, end: float) -> list[dict]:
        """The kept turns with start <= at < end, oldest first."""
        def get():
            self._purge(device_id, self._privacy(device_id)["retention_days"])
            rows = self._db.execute("SELECT at, app, child, reply FROM family_transcripts WHERE device_id=? "
                                    "AND at >= ? AND at < ? ORDER BY at LIMIT ?",
                                    (device_id, start, end, MAX_TURNS_READ))
            return [dict(r) for r in rows]
        return await self._run(get)

    async def delete_turns(self, device_id: str) -> int:
        return await self._run(lambda: self._db.execute("DELETE FROM family_transcripts WHERE device_id=?",
                                                        (device_id,)).rowcount)

    # ---- memory ----

    async def memory(self, device_id: str) -> dict:
        """{"enabled": bool, "profile": {...}} (the empty profile when none is kept)."""
        def get():
            enabled = self._privacy(device_id)["memory"]
            row = self._db.execute("SELECT profile FROM family_memory WHERE device_id=?", (device_id,)).fetchone()
            profile = dict(empty_profile(), **json.loads(row["profile"])) if (row and enabled) else empty_profile()
            return {"enabled": enabled, "profile": profile}
        return await self._run(get)

    async def set_memory(self, device_id: str, profile: dict) -> bool:
        """Store the whole profile; False (nothing kept) while memory is off."""
        def put():
            with self._db.transaction():
                self._db.lock("family_privacy", device_id)
                if not self._privacy(device_id)["memory"]:
                    return False
                self._db.execute("INSERT INTO family_memory (device_id, profile, updated_at) VALUES (?,?,?) "
                                 "ON CONFLICT (device_id) DO UPDATE SET profile=excluded.profile, "
                                 "updated_at=excluded.updated_at",
                                 (device_id, json.dumps(profile, ensure_ascii=False), time.time()))
            return True
        return await self._run(put)

    async def erase_memory(self, device_id: str) -> None:
        await self._run(lambda: self._db.execute("DELETE FROM family_memory WHERE device_id=?", (device_id,)))

    # ---- a device removed ----

    async def forget_device(self, device_id: str) -> None:
        """Every row kept here for the device (DELETE /api/devices/{id})."""
        def forget():
            with self._db.transaction():
                for table in ("family_topics", "family_flags", "family_privacy", "family_transcripts",
                              "family_memory"):
                    self._db.execute("DELETE FROM %s WHERE device_id=?" % table, (device_id,))
        await self._run(forget)
