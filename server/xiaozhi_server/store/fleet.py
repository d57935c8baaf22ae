"""What the nodes sharing one store know of each other (`store.fleet`,
on the store's connection and worker thread; tables in schema.py).

    nodes          node_id, ws_url (what devices are sent to; NULL: not
                   reachable from other nodes), http_url, lock_id, state
                   (serving | draining), sessions, started_at, heartbeat_at
    device_routes  device_id -> node_id, assigned_at (sticky while that node lives)
    settings       name -> value (the server secret every node derives device credentials from)

A node is live while its heartbeat is younger than node_ttl_s by the
database's clock (nodes' own clocks may differ), and, on PostgreSQL, while
it holds its session-level advisory lock: a killed node's connection
closes with it, so it is dead at once rather than after the TTL; a node
cut off by the network keeps its lock until its connection times out, and
the TTL drops it first.
"""
import random

from .records import Records

# Advisory locks (key1, key2) of nodes: key1 is this constant, key2 the node's lock_id.
NODE_LOCK_CLASS = 0x785A
NODE_TTL_S = 3.0
FORGET_AFTER_S = 600.0      # a dead node's row is kept this long, for `node list`
# A device sent to a node counts towards its load this long, until its
# session shows in the node's heartbeat (counted twice meanwhile, on every node alike).
RECENT_ROUTE_S = 10.0
SERVING = "serving"
DRAINING = "draining"

LIVE_NODES = "SELECT node_id FROM nodes WHERE heartbeat_at > {now} - {ttl}{held}"
_HELD_PG = (" AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = %d AND l.objid = nodes.lock_id AND l.objsubid = 2 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))" % NODE_LOCK_CLASS)


def _node(row):
    return {k: row[k] for k in ("node_id", "ws_url", "http_url", "state", "sessions", "started_at", "heartbeat_at")}


class FleetRecords(Records):
    def __init__(self, connection):
        super().__init__(connection)
        self.node_ttl_s = NODE_TTL_S
        self._node_lock = None      # (node_id, lock_id) this process holds, taken again after a reconnect

    def live_nodes_sql(self):
        """SQL selecting the node_id of every live node (deliveries and the
        family's device list ask it inside their own statements)."""
        return LIVE_NODES.format(now=self._db.now, ttl=repr(float(self.node_ttl_s)),
                                 held=_HELD_PG if self._db.dialect == "postgres" else "")

    def take_node_lock(self):
        """On the worker thread; also after every reconnect (sql.py's on_connect)."""
        if self._node_lock is not None and self._db.dialect == "postgres":
            self._db.execute("SELECT pg_advisory_lock(?, ?)", (NODE_LOCK_CLASS, self._node_lock[1]))

    # ---- this node ----

    async def register_node(self, node_id, ws_url, http_url, state=SERVING):
        """Enter this node (or enter it again after it was forgotten) and take its lock."""
        def register():
            if self._node_lock is None:
                self._node_lock = (node_id, random.randint(1, 2 ** 31 - 1))
            self.take_node_lock()
            self._db.execute(
                "INSERT INTO nodes (node_id, ws_url, http_url, lock_id, state, sessions, started_at, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, 0, {now}, {now}) ON CONFLICT (node_id) DO UPDATE SET ws_url = excluded.ws_url, "
                "http_url = excluded.http_url, lock_id = excluded.lock_id, heartbeat_at = excluded.heartbeat_at"
                .format(now=self._db.now), (node_id, ws_url, http_url, self._node_lock[1], state))
        await self._run(register)

    async def heartbeat(self, node_id, sessions):
        """Say this node lives and how many sessions it holds; its state as
        stored (another node may have asked it to drain), or None when its
        row is gone (it was dead long enough to be forgotten: register again)."""
        def beat():
            row = self._db.execute(
                "UPDATE nodes SET heartbeat_at = {now}, sessions = ? WHERE node_id = ? RETURNING state"
                .format(now=self._db.now), (sessions, node_id)).fetchone()
            self._db.execute("DELETE FROM nodes WHERE heartbeat_at < {now} - ?".format(now=self._db.now),
                             (FORGET_AFTER_S,))
            return row[0] if row else None
        return await self._run(beat)

    async def set_node_state(self, node_id, state):
        """serving or draining; True when the node is known."""
        def put():
            return self._db.execute("UPDATE nodes SET state = ? WHERE node_id = ?", (state, node_id)).rowcount
        return await self._run(put) > 0

    async def leave(self, node_id):
        """This node stops: its row and its routes go, its lock is given back."""
        def go():
            self._db.execute("DELETE FROM device_routes WHERE node_id = ?", (node_id,))
            self._db.execute("DELETE FROM nodes WHERE node_id = ?", (node_id,))
            if self._node_lock is not None and self._db.dialect == "postgres":
                self._db.execute("SELECT pg_advisory_unlock(?, ?)", (NODE_LOCK_CLASS, self._node_lock[1]))
            self._node_lock = None
        await self._run(go)

    # ---- all nodes ----

    async def nodes(self):
        """Every known node with `live` (bool), newest first."""
        def read():
            live = {r[0] for r in self._db.execute(self.live_nodes_sql())}
            out = []
            for r in self._db.execute("SELECT * FROM nodes ORDER BY started_at DESC, node_id"):
                d = _node(r)
                d["live"] = d["node_id"] in live
                out.append(d)
            return out
        return await self._run(read)

    async def route(self, device_id, self_node_id=None):
        """The node a device should connect to: the one it was sent to before
        while that node lives and serves, else the least loaded live serving
        node with a public URL (sessions it reported, plus devices sent to it
        in the last RECENT_ROUTE_S), which becomes the device's route. The node dict, or None when
        no node can take it."""
        def pick():
            serving = ("SELECT * FROM nodes WHERE state = 'serving' AND node_id IN (%s) "
                       "AND (ws_url IS NOT NULL OR node_id = ?)" % self.live_nodes_sql())
            with self._db.transaction():
                self._db.lock("route", device_id)
                row = self._db.execute(
                    "SELECT n.* FROM (%s) n JOIN device_routes r ON r.node_id = n.node_id WHERE r.device_id = ?"
                    % serving, (self_node_id, device_id)).fetchone()
                if row is not None:
                    return _node(row)
                row = self._db.execute(
                    "SELECT n.*, n.sessions + (SELECT COUNT(*) FROM device_routes r WHERE r.node_id = n.node_id "
                    "AND r.assigned_at > {now} - ?) AS load FROM (%s) n ORDER BY load, random() LIMIT 1"
                    .format(now=self._db.now) % serving, (RECENT_ROUTE_S, self_node_id)).fetchone()
                if row is None:
                    return None
                self._db.execute(
                    "INSERT INTO device_routes (device_id, node_id, assigned_at) VALUES (?, ?, {now}) "
                    "ON CONFLICT (device_id) DO UPDATE SET node_id = excluded.node_id, assigned_at = excluded.assigned_at"
                    .format(now=self._db.now), (device_id, row["node_id"]))
                return _node(row)
        return await self._run(pick)

    # ---- the shared secret ----

    async def shared_secret(self, candidate):
        """The server secret every node uses: the first one stored wins
        (`candidate` is this node's, offered in case none is stored yet)."""
        def get():
            self._db.execute("INSERT INTO settings (name, value) VALUES ('server_secret', ?) "
                             "ON CONFLICT (name) DO NOTHING", (candidate,))
            return self._db.execute("SELECT value FROM settings WHERE name = 'server_secret'").fetchone()[0]
        return await self._run(get)
