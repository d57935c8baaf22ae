"""The store's family records (`store.family`, on the store's connection and
worker thread; tables in schema.py, migration 5): what a parent sets for a
device and what the child did with it, per local day.

    device_settings  device_id, name, timezone, bedtime_start, bedtime_end,
                     daily_talk_minutes, updated_at
    usage_days       device_id, day (YYYY-MM-DD in the device's time zone),
                     talk_seconds, translations
    lesson_days      device_id, day, name, plays, passes
    lesson_reports   device_id, report_key, day: the board reports counted

Counting is one upsert that adds to the day's row, so sessions on several
nodes count into the same row without reading it first. Days older than
the retention are purged (purge_usage). forget_device() removes every row
of a device in every table of the control store, its credentials' record included.
"""
import time

from .records import Records

SETTINGS = ("name", "timezone", "bedtime_start", "bedtime_end", "daily_talk_minutes", "language")


class FamilyRecords(Records):
    def __init__(self, connection, fleet):
        super().__init__(connection)
        self._fleet = fleet     # which nodes live: who holds a device's voice session

    # ---- a device's settings: its name and limits ----

    async def get_settings(self, device_id):
        """The device's settings row as a dict, or None when a parent set nothing."""
        def get():
            row = self._db.execute("SELECT * FROM device_settings WHERE device_id=?", (device_id,)).fetchone()
            return dict(row) if row else None
        return await self._run(get)

    async def put_settings(self, device_id, **fields):
        """Set some of SETTINGS (others keep their value); the row after."""
        bad = set(fields) - set(SETTINGS)
        if bad:
            raise ValueError("not a device setting: %s" % ", ".join(sorted(bad)))

        def put():
            cols = list(fields)
            self._db.execute(
                "INSERT INTO device_settings (device_id, %s updated_at) VALUES (?, %s ?) "
                "ON CONFLICT (device_id) DO UPDATE SET %s updated_at=excluded.updated_at"
                % ("".join(c + ", " for c in cols), "?, " * len(cols), "".join("%s=excluded.%s, " % (c, c) for c in cols)),
                (device_id, *[fields[c] for c in cols], time.time()))
            return dict(self._db.execute("SELECT * FROM device_settings WHERE device_id=?", (device_id,)).fetchone())
        return await self._run(put)

    async def known_devices(self):
        """Every device the store knows (given credentials, activated, named,
        that ever reported state, or seen by OTA or WebSocket): [{device_id,
        name, state, received_at, login (it has an MQTT login), via,
        firmware, seen_at, held_by (the live node holding its voice session)}]."""
        def read():
            live = {r[0] for r in self._db.execute(self._fleet.live_nodes_sql())}
            rows = self._db.execute(
                "SELECT k.device_id, ds.name, ds.timezone, st.state, st.received_at, d.via AS login_via, "
                "sd.via, sd.firmware, sd.last_seen_at AS seen_at, sd.node_id FROM "
                "(SELECT device_id FROM devices UNION SELECT device_id FROM device_states "
                "UNION SELECT device_id FROM device_settings UNION SELECT device_id FROM seen_devices) k "
                "LEFT JOIN device_settings ds ON ds.device_id = k.device_id "
                "LEFT JOIN devices d ON d.device_id = k.device_id "
                "LEFT JOIN seen_devices sd ON sd.device_id = k.device_id "
                "LEFT JOIN device_states st ON st.device_id = k.device_id ORDER BY k.device_id")
            out = []
            for r in rows:
                row = dict(r)
                row["login"] = row.pop("login_via") is not None
                node = row.pop("node_id")
                row["held_by"] = node if node in live else None     # a dead node holds nothing
                out.append(row)
            return out
        return await self._run(read)

    async def device_known(self, device_id):
        """Does the store know the device (as known_devices() lists it)?"""
        def get():
            return any(self._db.execute("SELECT 1 FROM %s WHERE device_id=?" % t, (device_id,)).fetchone()
                       for t in ("devices", "device_states", "device_settings", "seen_devices"))
        return await self._run(get)

    # ---- usage, per device and local day ----

    async def add_usage(self, device_id, day, talk_seconds=0.0, translations=0):
        def add():
            self._db.execute(
                "INSERT INTO usage_days (device_id, day, talk_seconds, translations) VALUES (?,?,?,?) "
                "ON CONFLICT (device_id, day) DO UPDATE SET talk_seconds=usage_days.talk_seconds + "
                "excluded.talk_seconds, translations=usage_days.translations + excluded.translations",
                (device_id, day, float(talk_seconds), int(translations)))
        await self._run(add)

    async def add_lesson(self, device_id, day, name, passes, report_key=None):
        """Count one play; with report_key (the board report it comes from),
        only the first caller counts it: False for the others."""
        def add():
            if report_key is not None and self._db.execute(
                    "INSERT INTO lesson_reports (device_id, report_key, day) VALUES (?,?,?) "
                    "ON CONFLICT (device_id, report_key) DO NOTHING", (device_id, report_key, day)).rowcount == 0:
                return False
            self._db.execute(
                "INSERT INTO lesson_days (device_id, day, name, plays, passes) VALUES (?,?,?,1,?) "
                "ON CONFLICT (device_id, day, name) DO UPDATE SET plays=lesson_days.plays + 1, "
                "passes=lesson_days.passes + excluded.passes", (device_id, day, name, int(passes)))
            return True

        def add_once():
            with self._db.transaction():
                return add()
        return await self._run(add_once)

    async def talk_seconds(self, device_id, day):
        def get():
            row = self._db.execute("SELECT talk_seconds FROM usage_days WHERE device_id=? AND day=?",
                                   (device_id, day)).fetchone()
            return float(row[0]) if row else 0.0
        return await self._run(get)

    async def usage(self, device_id, first_day, last_day):
        """{day: {"talk_seconds", "translations", "lessons": [{name, plays, passes}]}}
        for the days that have any row, first_day..last_day inclusive."""
        def read():
            out = {}
            for r in self._db.execute("SELECT * FROM usage_days WHERE device_id=? AND day >= ? AND day <= ?",
                                      (device_id, first_day, last_day)):
                out[r["day"]] = {"talk_seconds": r["talk_seconds"], "translations": r["translations"], "lessons": []}
            for r in self._db.execute("SELECT * FROM lesson_days WHERE device_id=? AND day >= ? AND day <= ? "
                                      "ORDER BY day, name", (device_id, first_day, last_day)):
                day = out.setdefault(r["day"], {"talk_seconds": 0.0, "translations": 0, "lessons": []})
                day["lessons"].append({"name": r["name"], "plays": r["plays"], "passes": r["passes"]})
            return out
        return await self._run(read)

    async def purge_usage(self, before_day):
        """Delete usage of days before before_day (YYYY-MM-DD); rows deleted."""
        def purge():
            return sum(self._db.execute("DELETE FROM %s WHERE day < ?" % t, (before_day,)).rowcount
                       for t in ("usage_days", "lesson_days", "lesson_reports"))
        return await self._run(purge)

    # ---- forgetting a device ----

    async def forget_device(self, device_id):
        """Delete every row of the device in every table that has a device_id
        column (so a feature's table added by a later migration is covered
        without naming it here), in one transaction; True when there was any."""
        def forget():
            with self._db.transaction():
                self._db.lock("device", device_id)
                tables = sorted(t for t in self._db.tables() if "device_id" in self._db.table_columns(t))
                return sum(self._db.execute("DELETE FROM %s WHERE device_id=?" % t, (device_id,)).rowcount
                           for t in tables) > 0
        return await self._run(forget)
