"""A family's rules for each device, and the child's usage counted by day.

    family = Family(store.family, default_timezone="Asia/Shanghai", retention_days=90)
    await family.put_limits("dev1", {"timezone": "Asia/Shanghai",
                                     "bedtime": {"start": "20:30", "end": "07:00"},
                                     "daily_talk_minutes": 30})
    key = await family.refusal("dev1")   # None, "limit_bedtime" or "limit_talk_time"
    await family.count_talk("dev1", 12.5)
    await family.usage("dev1", days=7)

Sessions ask refusal() before the child's words reach chat or translation
(runtime/runtime.py); the answer is a key of the lines file, the kind line
the device says instead. Lessons a parent starts are not asked about.

Days are the device's local days (its time zone, else the default): what a
parent means by "today". `clock` (unix seconds) is the one clock of this
object, so a test can move it to bedtime. A store that cannot be reached
refuses nothing (the child is not silenced by a database outage; it is
logged) and drops the count it could not write.
"""
from __future__ import annotations

import datetime
import logging
import re
import time
import unicodedata
import zoneinfo
from typing import Callable

from ..errors import BadRequest, StoreUnavailable

log = logging.getLogger(__name__)

BEDTIME = "limit_bedtime"         # lines.json keys of the kind lines
TALK_TIME = "limit_talk_time"
MAX_TALK_MINUTES = 24 * 60
MAX_USAGE_DAYS = 366
MAX_NAME = 64
_HHMM = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
LIMIT_FIELDS = ("timezone", "bedtime", "daily_talk_minutes", "language")
# The languages a parent may say the child speaks (the recogniser then hears only it).
CHILD_LANGUAGES = ("zh", "en")


def _minute_of(text, field):
    m = _HHMM.match(text) if isinstance(text, str) else None
    if m is None:
        raise BadRequest("%s: %r is not a time of day as HH:MM (00:00 to 23:59)" % (field, text))
    return int(m.group(1)) * 60 + int(m.group(2))


def zone(name, field="timezone"):
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        raise BadRequest("%s: %r is not an IANA time zone (like Asia/Shanghai or Europe/Berlin)" % (field, name))


def in_window(minute, start, end):
    """Is minute-of-day inside [start, end), a window that may cross midnight?"""
    if start <= end:
        return start <= minute < end
    return minute >= start or minute < end


def check_name(body):
    if not isinstance(body, dict) or set(body) != {"name"}:
        raise BadRequest("the body must be {\"name\": \"...\"} (the name a parent gives the device)")
    name = body["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise BadRequest("name: a text of 1 to %d characters" % MAX_NAME)
    bad = next((c for c in name if not printable(c)), None)
    if bad is not None:
        raise BadRequest("name: printable text only (U+%04X is a control, format or direction character)" % ord(bad))
    return name.strip()


def printable(c):
    """A character a name may hold: anything but controls (NUL, ESC, line
    breaks), format characters (right-to-left overrides, zero-width spaces)
    and unassigned or private ones; the zero-width joiner stays, emoji
    sequences need it."""
    if c == "\u200d":
        return True
    cat = unicodedata.category(c)
    return cat[0] != "C" and cat not in ("Zl", "Zp")


def check_limits(body):
    """The stored columns of a limits body; BadRequest naming the field."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with %s" % ", ".join(LIMIT_FIELDS))
    for k in body:
        if k not in LIMIT_FIELDS:
            raise BadRequest("%s: unknown field (expected %s)" % (k, ", ".join(LIMIT_FIELDS)))
    out = {}
    if "timezone" in body:
        zone(body["timezone"])
        out["timezone"] = body["timezone"]
    if "bedtime" in body:
        bed = body["bedtime"]
        if bed is None:
            out["bedtime_start"] = out["bedtime_end"] = None
        else:
            if not isinstance(bed, dict) or set(bed) != {"start", "end"}:
                raise BadRequest("bedtime: null, or {\"start\": \"HH:MM\", \"end\": \"HH:MM\"}")
            start, end = _minute_of(bed["start"], "bedtime.start"), _minute_of(bed["end"], "bedtime.end")
            if start == end:
                raise BadRequest("bedtime: start and end are the same time (null turns bedtime off)")
            out["bedtime_start"], out["bedtime_end"] = bed["start"], bed["end"]
    if "daily_talk_minutes" in body:
        m = body["daily_talk_minutes"]
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= MAX_TALK_MINUTES):
            raise BadRequest("daily_talk_minutes: null (no limit) or a whole number of minutes from 0 to %d"
                             % MAX_TALK_MINUTES)
        out["daily_talk_minutes"] = m
    if "language" in body:
        lang = body["language"]
        if lang is not None and lang not in CHILD_LANGUAGES:
            raise BadRequest("language: null (the recogniser chooses) or one of %s, not %r"
                             % (", ".join(CHILD_LANGUAGES), lang))
        out["language"] = lang
    return out


class Family:
    def __init__(self, records, default_timezone: str = "Asia/Shanghai", retention_days: int = 90,
                 clock: Callable[[], float] = time.time) -> None:
        self.records = records      # store.family: settings and usage per device
        self.default_timezone = default_timezone
        zone(default_timezone, "control.default_timezone")
        self.retention_days = int(retention_days)
        self.clock = clock
        self._purged_day = None

    # ---- limits ----

    def limits_of(self, row: dict | None) -> dict:
        row = row or {}
        bed = None
        if row.get("bedtime_start"):
            bed = {"start": row["bedtime_start"], "end": row["bedtime_end"]}
        return {"timezone": row.get("timezone") or self.default_timezone, "bedtime": bed,
                "daily_talk_minutes": row.get("daily_talk_minutes"), "language": row.get("language")}

    async def limits(self, device_id: str) -> dict:
        return self.limits_of(await self.records.get_settings(device_id))

    async def put_limits(self, device_id: str, body: object) -> dict:
        """Set the fields the body names (the others stay); the limits after."""
        fields = check_limits(body)
        return self.limits_of(await self.records.put_settings(device_id, **fields))

    def _local(self, row):
        tz = zoneinfo.ZoneInfo((row or {}).get("timezone") or self.default_timezone)
        return datetime.datetime.fromtimestamp(self.clock(), tz)

    def today(self, row: dict | None) -> str:
        return self._local(row).date().isoformat()

    async def refusal(self, device_id: str) -> str | None:
        """Why the child may not talk now: a lines key, or None."""
        try:
            row = await self.records.get_settings(device_id)
            if row is None:
                return None
            now = self._local(row)
            if row["bedtime_start"] and in_window(now.hour * 60 + now.minute, _minute_of(row["bedtime_start"], ""),
                                                  _minute_of(row["bedtime_end"], "")):
                return BEDTIME
            cap = row["daily_talk_minutes"]
            if cap is not None and await self.records.talk_seconds(device_id, now.date().isoformat()) >= cap * 60:
                return TALK_TIME
        except StoreUnavailable as e:
            log.warning("[%s] limits not checked: %s", device_id, e.message)
        return None

    # ---- usage ----

    async def _count(self, device_id, **counts):
        try:
            row = await self.records.get_settings(device_id)
            day = self.today(row)
            await self.records.add_usage(device_id, day, **counts)
            await self._purge(day)
        except StoreUnavailable as e:
            log.warning("[%s] usage not counted (%s): %s", device_id, counts, e.message)

    async def count_talk(self, device_id: str, seconds: float) -> None:
        if seconds > 0:
            await self._count(device_id, talk_seconds=seconds)

    async def count_translation(self, device_id: str) -> None:
        await self._count(device_id, translations=1)

    async def count_lesson(self, device_id: str, name: str, passes: int, report_key: str | None = None) -> None:
        try:
            day = self.today(await self.records.get_settings(device_id))
            await self.records.add_lesson(device_id, day, name, passes, report_key)
        except StoreUnavailable as e:
            log.warning("[%s] lesson %s not counted: %s", device_id, name, e.message)

    async def _purge(self, day):
        """Once per day seen here: drop usage older than the retention."""
        if self._purged_day == day:
            return
        self._purged_day = day
        cut = (datetime.date.fromisoformat(day) - datetime.timedelta(days=self.retention_days)).isoformat()
        n = await self.records.purge_usage(cut)
        if n:
            log.info("usage before %s purged (%d rows, retention %d days)", cut, n, self.retention_days)

    async def usage(self, device_id: str, days: int) -> dict:
        """The last `days` local days of the device, today last, each listed even when empty."""
        row = await self.records.get_settings(device_id)
        today = self._local(row).date()
        first = today - datetime.timedelta(days=days - 1)
        have = await self.records.usage(device_id, first.isoformat(), today.isoformat())
        out = []
        for i in range(days):
            d = (first + datetime.timedelta(days=i)).isoformat()
            u = have.get(d) or {"talk_seconds": 0.0, "translations": 0, "lessons": []}
            out.append({"date": d, "talk_seconds": int(round(u["talk_seconds"])), "lessons": u["lessons"],
                        "translations": u["translations"]})
        return {"device_id": device_id, "timezone": self.limits_of(row)["timezone"], "days": out}
