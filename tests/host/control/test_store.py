"""The control store on both back-ends (SQLite file, PostgreSQL): the same
calls give the same answers, and the schema is migrated once, in order."""
import asyncio
import sqlite3
import threading
import time

import pytest

from xiaozhi_server.store import schema, sql
from xiaozhi_server.store.store import Store
from xiaozhi_server.store.devices import (ADDED, CODE_TAKEN, FULL, PREFIX_FULL, SOURCE_FULL,
                                                  ActivationLimits)


def _sched(device_id, alarm_id, **kw):
    now = time.time()
    s = {"device_id": device_id, "alarm_id": alarm_id, "time": "07:30", "days": [1, 2],
         "pending_task": {"app_id": "chat", "task_id": "conversation"}, "created_at": now, "updated_at": now,
         "state": "pending_ack", "last_req_id": None}
    s.update(kw)
    return s


@pytest.fixture
async def store(control_db):
    s = await Store(control_db()).open()
    yield s
    await s.close()


async def test_schedules_requests_and_acks(store):
    assert await store.create_schedule(_sched("d1", "a1"), 8) == "ok"
    assert await store.create_schedule(_sched("d1", "a1"), 8) == "exists"
    got = await store.get_schedule("d1", "a1")
    assert got["days"] == [1, 2] and got["revision"] == 1 and got["state"] == "pending_ack"
    assert await store.replace_schedule(_sched("d1", "a1", time="08:00"), if_revision=1)
    assert not await store.replace_schedule(_sched("d1", "a1", time="09:00"), if_revision=1)
    assert (await store.get_schedule("d1", "a1"))["time"] == "08:00"
    for i in range(3):
        await store.add_request("r%d" % i, "d1", "SET_ALARM", {"n": i})
    assert [r["req_id"] for r in await store.recent_requests("d1")] == ["r2", "r1", "r0"]
    first = await store.record_ack("r1", {"ok": True})
    assert first["ack"] == {"ok": True}
    assert await store.record_ack("r1", {"ok": False}) is None      # the first ack stays
    assert await store.counts("d1") == {"requests": 3, "sent": 0, "acked": 1}
    assert await store.mark_deleted("d1", "a1")
    assert not await store.mark_deleted("d1", "a1")
    assert await store.list_schedules("d1") == []


async def test_live_schedules_capped_under_concurrent_creates(store):
    outcomes = await asyncio.gather(*[store.create_schedule(_sched("d2", "a%d" % i), 8) for i in range(20)])
    assert outcomes.count("ok") == 8 and outcomes.count("full") == 12


async def test_activation_approved_once(store):
    assert await store.devices.add_activation("123456", "d3", "c3", "ch", 600) == ADDED
    assert await store.devices.add_activation("123456", "d4", "c4", "ch", 600) == CODE_TAKEN
    results = await asyncio.gather(*[store.devices.approve_activation("123456") for _ in range(5)])
    assert sum(r is not None for r in results) == 1
    assert (await store.devices.get_device("d3"))["client_id"] == "c3"


async def test_waiting_activations_are_limited_per_source_and_prefix_and_expire(store):
    limits = ActivationLimits(waiting=6, per_source=2, per_prefix=3)

    async def add(code, device, source, prefix, ttl_s=600):
        return await store.devices.add_activation(code, device, "c", "ch", ttl_s, source, prefix, limits)
    assert [await add("10000%d" % i, "d%d" % i, "10.0.0.1", "p%d" % i) for i in range(3)] == \
        [ADDED, ADDED, SOURCE_FULL]
    assert [await add("20000%d" % i, "e%d" % i, "10.0.1.%d" % i, "aa:bb:cc") for i in range(4)] == \
        [ADDED, ADDED, ADDED, PREFIX_FULL]
    assert await add("300000", "gone", "10.0.2.1", "zz", ttl_s=-1) == ADDED     # expired at once
    assert await add("300001", "f", "10.0.2.2", "yy") == ADDED
    # Full: the address holding the most codes gives up its oldest one.
    assert await add("300002", "g", "10.0.2.3", "xx") == (ADDED, ("10.0.0.1", 2, "d0"))
    waiting = await store.devices.waiting_activations()
    assert [w["code"] for w in waiting] == ["100001", "200000", "200001", "200002", "300001", "300002"]
    # Every address now holds one code: the pool is truly full, nobody's code is taken.
    assert await add("300003", "h", "10.0.2.4", "ww") == FULL
    assert await store.devices.clear_activation("100001") and not await store.devices.clear_activation("100001")
    assert await add("300003", "h", "10.0.2.4", "ww") == ADDED


async def test_eleven_addresses_cannot_starve_a_new_board(store):
    # As shipped: 100 places, 10 per address. Eleven addresses ask for all
    # they may; a real board from a twelfth address still gets its code.
    limits = ActivationLimits()
    n = 0
    for a in range(11):
        for i in range(10):
            n += 1
            got = await store.devices.add_activation("%06d" % n, "x%d" % n, "c", "ch", 600, "10.9.%d.1" % a,
                                                     "p%d" % n, limits)
            assert got == ADDED or got == FULL or got[0] == ADDED   # FULL: its fair share reached
    got = await store.devices.add_activation("999999", "board", "c", "ch", 600, "192.168.1.20", "aa:bb:cc", limits)
    assert got[0] == ADDED and got[1][0].startswith("10.9.")
    assert "999999" in [w["code"] for w in await store.devices.waiting_activations()]
    assert len(await store.devices.waiting_activations()) == 100


async def test_state_reports_and_resend_rounds(store):
    await store.save_state("d5", {"state": "idle"})
    await store.save_state("d5", {"state": "speaking"})
    assert (await store.get_state("d5"))["report"] == {"state": "speaking"}
    assert await store.deliveries.claim_resend_round("d5", 30)
    assert not await store.deliveries.claim_resend_round("d5", 30)


async def test_due_schedules_claimed_once_by_nodes_sharing_the_store(control_db, store):
    """Three nodes (three connections) claim 300 due schedules at once: each
    is claimed by exactly one; a dead node's claim is taken over with its req_id."""
    for i in range(300):
        await store.create_schedule(_sched("d%d" % (i % 40), "a%d" % i), None)
    assert await store.deliveries.due_count() == 300
    nodes = [await Store(control_db()).open() for _ in range(3)]
    try:
        for i, n in enumerate(nodes):
            # These nodes send no heartbeat: with the shipped 3 s TTL a slow
            # run (a loaded machine) saw a live node as dead and took over
            # its claims mid-drain. Here a node dies only by leaving.
            n.fleet.node_ttl_s = 3600.0
            await n.fleet.register_node("node%d" % i, None, None)

        async def drain(n, i):
            got = []
            while True:
                batch = await n.deliveries.claim_due("node%d" % i, 7)
                if not batch:
                    return got
                for c in batch:
                    got.append(c["alarm_id"])
                    assert await n.deliveries.delivered(c["device_id"], c["alarm_id"], c["claim_req_id"])
        claimed = await asyncio.gather(*[drain(n, i) for i, n in enumerate(nodes)])
        ids = [a for got in claimed for a in got]
        assert sorted(ids) == sorted("a%d" % i for i in range(300))
        assert await store.deliveries.due_count() == 0

        await store.mark_deleted("d0", "a0")        # due again, claimed by node0, which then dies
        c = await nodes[0].deliveries.claim_one("d0", "a0", "node0")
        assert await nodes[1].deliveries.claim_one("d0", "a0", "node1") is None    # node0 holds it while it lives
        await nodes[0].fleet.leave("node0")
        taken = await nodes[1].deliveries.claim_one("d0", "a0", "node1")
        assert taken["claim_req_id"] == c["claim_req_id"] and taken["taken_over"]
    finally:
        for n in nodes:
            await n.close()


async def test_migrations_recorded_once(store):
    def versions():
        return sorted(r[0] for r in store._db.execute("SELECT version FROM schema_migrations"))
    assert await store._run(versions) == [m.version for m in schema.MIGRATIONS]
    assert await store._run(schema.migrate, store._db) == []


async def test_nodes_starting_together_migrate_once(control_db):
    target = control_db("fresh.db")
    stores = [Store(target) for _ in range(3)]
    try:
        await asyncio.gather(*[s.open() for s in stores])
        rows = await stores[0]._run(lambda: stores[0]._db.execute("SELECT version FROM schema_migrations").fetchall())
        assert sorted(r[0] for r in rows) == [m.version for m in schema.MIGRATIONS]
    finally:
        for s in stores:
            await s.close()


def test_nodes_opening_one_new_file_at_once_all_open_it(tmp_path):
    """Three nodes starting together on a new SQLite file each turn it to WAL:
    SQLite may answer "locked" at once, without its busy wait, to the others."""
    failed = []
    for n in range(200):
        path, start = str(tmp_path / ("new%d.db" % n)), threading.Barrier(3)

        def node():
            start.wait()
            try:
                sql.open_database(path).close()
            except sqlite3.OperationalError as e:
                failed.append(str(e))
        nodes = [threading.Thread(target=node) for _ in range(3)]
        for t in nodes:
            t.start()
        for t in nodes:
            t.join()
    assert failed == []


async def test_a_file_of_the_release_before_migrations_is_migrated_in_place(tmp_path):
    path = str(tmp_path / "old.db")
    db = sqlite3.connect(path)
    # The schema a release before migrations left (schedules without revision, requests without created_at).
    db.executescript("""
    CREATE TABLE schedules (device_id TEXT NOT NULL, alarm_id TEXT NOT NULL, at INTEGER, time TEXT, days TEXT,
        pending_task TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, state TEXT NOT NULL,
        last_req_id TEXT, PRIMARY KEY (device_id, alarm_id));
    CREATE TABLE requests (req_id TEXT PRIMARY KEY, device_id TEXT NOT NULL, action TEXT NOT NULL,
        payload TEXT NOT NULL, sent_at REAL, ack TEXT, acked_at REAL);
    CREATE TABLE device_states (device_id TEXT PRIMARY KEY, state TEXT NOT NULL, received_at REAL NOT NULL);
    INSERT INTO schedules VALUES ('kid', 'wake', NULL, '07:30', '[1]', '{"app_id": "chat", "task_id": "conversation"}',
        1.0, 1.0, 'active', 'rold2');
    INSERT INTO requests VALUES ('rold1', 'kid', 'SET_ALARM', '{}', 1.0, NULL, NULL);
    INSERT INTO requests VALUES ('rold2', 'kid', 'SET_ALARM', '{}', 2.0, '{"ok": true}', 2.5);
    """)
    db.commit()
    db.close()
    store = await Store(path).open()
    try:
        s = await store.get_schedule("kid", "wake")
        assert s["state"] == "active" and s["revision"] == 1 and s["time"] == "07:30"
        await store.add_request("rnew", "kid", "SET_ALARM", {})
        assert [r["req_id"] for r in await store.recent_requests("kid")] == ["rnew", "rold2", "rold1"]
        assert await store.deliveries.due_count() == 0
    finally:
        await store.close()
    again = await Store(path).open()     # opened again: nothing left to migrate
    try:
        assert await again._run(schema.migrate, again._db) == []
    finally:
        await again.close()


async def test_a_database_newer_than_this_release_is_refused(control_db):
    store = await Store(control_db()).open()
    await store._run(lambda: store._db.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)",
        (schema.LATEST + 1,)))
    await store.close()
    with pytest.raises(schema.SchemaError, match="newer than this release"):
        await Store(control_db()).open()


async def test_an_ack_and_its_schedules_state_are_stored_together(store):
    """The node that records an ack sets the schedule's state in the same
    transaction: none can die between the two and leave it pending for ever."""
    assert await store.create_schedule(_sched("d1", "a1"), 8) == "ok"
    [claimed] = await store.deliveries.claim_due("n1")
    req_id = claimed["claim_req_id"]
    await store.add_request(req_id, "d1", "SET_ALARM", {"alarm_id": "a1"})
    assert await store.record_ack(req_id, {"ok": True}, ("d1", "a1", "active"))
    assert (await store.get_schedule("d1", "a1"))["state"] == "active"
    assert await store.record_ack(req_id, {"ok": False}, ("d1", "a1", "failed")) is None
    assert (await store.get_schedule("d1", "a1"))["state"] == "active", "only the first ack decides"


async def test_the_sqlite_store_is_the_owners_alone(tmp_path):
    # Children's transcripts and memory live here: no other user of the
    # machine reads them (0700 folder, 0600 file and its WAL), even when the
    # umask would allow it, and a store made open before is tightened.
    import os
    import stat
    old = os.umask(0o022)
    try:
        path = tmp_path / "var" / "control.db"
        s = await Store(str(path)).open()
        await s.close()
        older = tmp_path / "old" / "control.db"
        older.parent.mkdir(mode=0o755)
        older.touch(mode=0o644)
        os.chmod(older, 0o644)
        s = await Store(str(older)).open()
        await s.close()
    finally:
        os.umask(old)
    for folder in (path.parent, older.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for f in list(path.parent.iterdir()) + list(older.parent.iterdir()):
        assert stat.S_IMODE(f.stat().st_mode) & 0o077 == 0, (f, oct(f.stat().st_mode))
