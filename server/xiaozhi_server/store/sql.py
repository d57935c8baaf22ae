"""The two databases the control store runs on, behind one small interface.

    db = open_database("var/control.db")                    # SQLite: one machine (the default)
    db = open_database("postgresql://xz@db.lan/xiaozhi")    # PostgreSQL: nodes sharing one store
    cur = db.execute("SELECT * FROM schedules WHERE device_id=?", (device_id,))
    cur.fetchone()["state"], cur.fetchall(), cur.rowcount     # rows by name or by index
    with db.transaction():          # BEGIN IMMEDIATE / a psycopg transaction
        db.lock("device", device_id)   # one writer per key, across every node
    db.now      # SQL for the database's own clock in unix seconds: nodes' clocks may differ

SQL is written once, with `?` placeholders and syntax both databases take
(ON CONFLICT, RETURNING, row values); the PostgreSQL side turns `?` into
psycopg's `%s`. Where they differ (row locks, advisory locks, the clock)
the dialect names the piece of SQL.

Calls come from one thread (store.py's worker), so neither connection is
shared between threads. A PostgreSQL connection that breaks (the server
restarted, the network went) raises StoreUnavailable with the address and
the reason; the next call connects again. A statement whose connection
broke is not retried: its outcome is unknown to us, and the caller's
caller (the API answering 503, a loop trying again later) decides.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import time
import urllib.parse
from typing import Any, Callable, Iterator

from ..errors import StoreUnavailable

log = logging.getLogger(__name__)

POSTGRES_SCHEMES = ("postgresql", "postgres")
# A node's TCP keepalives on its database connection, so a database behind
# a broken network is noticed in seconds (the kernel's default is 2 hours).
KEEPALIVES = {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3"}
CONNECT_TIMEOUT_S = 5


def is_postgres(url: str | None) -> bool:
    return bool(url) and urllib.parse.urlsplit(url).scheme in POSTGRES_SCHEMES


def where(url: str) -> str:
    """The database's address for messages, without a password."""
    if not is_postgres(url):
        return url
    u = urllib.parse.urlsplit(url)
    host = u.hostname or urllib.parse.parse_qs(u.query).get("host", ["local socket"])[0]
    return "postgresql://%s%s%s" % (host, ":%d" % u.port if u.port else "", u.path)


def _private_file(path: str) -> None:
    """The store holds children's transcripts and memory: its folder is the
    owner's alone (0700) and the file 0600 before SQLite opens it (its -wal
    and -shm files take the file's mode). A store made before this is
    tightened, and said so."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if st.st_uid == os.getuid() and st.st_mode & 0o077 and os.path.dirname(path):
        os.chmod(folder, 0o700)
        log.warning("%s was open to other users: now 0700 (it holds the control store)", folder)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for name in (path, path + "-wal", path + "-shm"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
                log.warning("%s was readable by other users: now 0600", name)
        except FileNotFoundError:
            pass


BUSY_WAIT_S = 30     # how long a statement waits for another process's lock


class SqliteDatabase:
    dialect = "sqlite"
    now = "((julianday('now') - 2440587.5) * 86400.0)"
    skip_locked = ""        # one writer at a time already: a claim is never contended

    def __init__(self, path: str) -> None:
        self.path = path
        self.address = path
        _private_file(path)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_WAIT_S)
        self._db.row_factory = sqlite3.Row
        self._wal()
        self._db.execute("PRAGMA synchronous=NORMAL")
        self.on_connect: Callable[[], None] | None = None

    def _wal(self) -> None:
        # Turning a new file to WAL needs it alone, and SQLite answers "locked"
        # at once, without its busy wait, while another process (nodes that
        # start together) is doing the same: so this waits here.
        deadline = time.monotonic() + BUSY_WAIT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)

    def execute(self, sql: str, args: tuple | list = ()) -> Any:
        return self._db.execute(sql, args)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        # IMMEDIATE: the write lock first, so a read inside sees what it writes over.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def lock(self, *key: str) -> None:
        """Inside transaction(): SQLite already holds the one write lock."""

    def table_columns(self, table: str) -> list[str]:
        return [r["name"] for r in self._db.execute("PRAGMA table_info(%s)" % table)]

    def tables(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def close(self) -> None:
        self._db.close()


class _Row(tuple):
    """A PostgreSQL row read like sqlite3.Row: by index, by name, or dict(row)."""

    __slots__ = ()
    _names: dict[str, int] = {}

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor):
    names = {c.name: i for i, c in enumerate(cursor.description or ())}
    row_class = type("Row", (_Row,), {"_names": names, "__slots__": ()})
    return lambda values: row_class(values)


_PLACEHOLDER = re.compile(r"\?")


class PostgresDatabase:
    dialect = "postgres"
    now = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str) -> None:
        import psycopg
        self._psycopg = psycopg
        self.url = url
        self.address = where(url)
        self._conn = None
        self._sql_cache: dict[str, str] = {}
        # Called after every (re)connect, on this thread (the store takes its node lock again).
        self.on_connect: Callable[[], None] | None = None
        self._connect()

    def _connect(self) -> None:
        psycopg = self._psycopg
        params = dict(KEEPALIVES, connect_timeout=str(CONNECT_TIMEOUT_S), application_name="xiaozhi-server")
        given = psycopg.conninfo.conninfo_to_dict(self.url)
        params = {k: v for k, v in params.items() if k not in given}
        try:
            self._conn = psycopg.connect(self.url, autocommit=True, row_factory=_row_factory, **params)
        except psycopg.OperationalError as e:
            self._conn = None
            raise StoreUnavailable("the control database at %s is not reachable: %s"
                                   % (self.address, _first_line(e)))
        if self.on_connect is not None:
            self.on_connect()

    def _sql(self, sql: str) -> str:
        out = self._sql_cache.get(sql)
        if out is None:
            out = self._sql_cache[sql] = _PLACEHOLDER.sub("%s", sql.replace("%", "%%"))
        return out

    def _ready(self):
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = None
            self._connect()
        return self._conn

    def execute(self, sql: str, args: tuple | list = ()) -> Any:
        conn = self._ready()
        try:
            return conn.execute(self._sql(sql), tuple(args))
        except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as e:
            if conn.closed or conn.broken:
                self._conn = None
                raise StoreUnavailable("lost the control database at %s: %s" % (self.address, _first_line(e)))
            raise

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self._ready()
        try:
            with conn.transaction():
                yield
        except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as e:
            if conn.closed or conn.broken:
                self._conn = None
                raise StoreUnavailable("lost the control database at %s: %s" % (self.address, _first_line(e)))
            raise

    def lock(self, *key: str) -> None:
        """Inside transaction(): wait for, then hold until the end of the
        transaction, the advisory lock named by key (every node agrees on it)."""
        self.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", ("\x1f".join(key),))

    def table_columns(self, table: str) -> list[str]:
        return [r[0] for r in self.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ?", (table,))]

    def tables(self) -> set[str]:
        return {r[0] for r in self.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def open_database(target: str) -> SqliteDatabase | PostgresDatabase:
    """A PostgreSQL connection for postgresql:// (postgres://) URLs, else the
    SQLite file at `target` (a sqlite:/// URL or a path)."""
    if is_postgres(target):
        return PostgresDatabase(target)
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///"):]     # sqlite:///var/x.db is relative, sqlite:////x.db absolute
    return SqliteDatabase(target)
