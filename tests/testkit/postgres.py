"""A real PostgreSQL cluster from Debian's package, in a temp dir, for tests.

    pg = Postgres().start()           # initdb + postgres on a unix socket (and loopback TCP)
    url = pg.new_schema_url()         # a fresh, empty schema of one database: one per test
    pg.stop(); pg.start()             # the same cluster again: clients see an outage
    pg.close()

As root (CI), initdb and postgres refuse to run: they run as the package's
`postgres` user, owning the temp dir. `listen` puts the TCP listener on
another address (a network namespace's, tests/testkit/netns.py) and
`netns` starts the server inside that namespace.
"""
import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from testkit.mosquitto import free_port

_schemas = itertools.count(1)


def pg_bin(name):
    """A PostgreSQL server program: on PATH, else the newest of Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name),
                      key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if not versions:
        raise RuntimeError("PostgreSQL's %s is not installed: run `make setup` (Debian package postgresql, "
                           "tools/apt-packages.txt)" % name)
    return versions[-1]


def _as_server_user():
    """Popen keyword arguments that run a PostgreSQL program as a user it accepts."""
    if os.geteuid() != 0:
        return {}
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root needs the `postgres` user of Debian's postgresql package")
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


class Postgres:
    def __init__(self, listen="127.0.0.1", port=None, netns=None):
        self.listen = listen
        self.port = port or free_port()
        self.netns = netns
        self.dir = tempfile.mkdtemp(prefix="test-postgres-")
        self.data = os.path.join(self.dir, "data")
        self.user = "xiaozhi"
        self.proc = None
        self._log = None
        run_as = _as_server_user()
        if run_as:
            os.chown(self.dir, run_as["user"], run_as["group"])
        subprocess.run([pg_bin("initdb"), "-D", self.data, "-U", self.user, "--auth=trust", "-E", "UTF8",
                        "--no-sync", "--locale=C"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, cwd=self.dir, **run_as)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            # A test cluster: no durability waits, no background noise.
            f.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n"
                    "unix_socket_directories = '%s'\nlisten_addresses = '%s'\nport = %d\n"
                    "log_min_messages = warning\n" % (self.dir, listen, self.port))
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as f:
            f.write("host all all 0.0.0.0/0 trust\n")

    def url(self, dbname="postgres", host=None):
        return "postgresql://%s@%s:%d/%s" % (self.user, host or self.listen, self.port, dbname)

    @property
    def socket_url(self):
        return "postgresql://%s@/postgres?host=%s&port=%d" % (self.user, self.dir, self.port)

    def start(self, timeout=20):
        cmd = [pg_bin("postgres"), "-D", self.data]
        run_as = _as_server_user()
        if self.netns:
            # Entering the namespace needs root: the user changes after it.
            if run_as:
                cmd = ["setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups"] + cmd
            cmd = ["ip", "netns", "exec", self.netns] + cmd
            run_as = {}
        self._log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, cwd=self.dir, **run_as)
        import psycopg
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.socket_url, connect_timeout=2):   # the socket works in any namespace
                    return self
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("postgres did not start: %s" % self.log_tail())
                time.sleep(0.05)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def new_schema_url(self, host=None):
        """The URL of a fresh schema (the server's tables go there): one per test."""
        import psycopg
        name = "t%d_%d" % (os.getpid(), next(_schemas))
        with psycopg.connect(self.socket_url, autocommit=True) as c:
            c.execute("CREATE SCHEMA %s" % name)
        return self.url(host=host) + "?options=-csearch_path%%3D%s" % name

    def stop(self):
        """A clean, fast shutdown (pg_ctl's default mode: clients are disconnected)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- pytest fixtures (a conftest imports them) ----

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def postgres_cluster():
    """One cluster for the whole run; tests take a schema each."""
    pg = Postgres().start()
    yield pg
    pg.close()


# A test whose subject is the store runs on both back-ends; a test that only
# needs a server with a store runs on SQLite (store_backend), unless it
# carries this mark because what it checks is the store's (a restart, a race).
BOTH_STORES = pytest.mark.parametrize("store_backend", ["sqlite", "postgres"])


@pytest.fixture
def store_backend():
    """The back-end of the store of a server a test starts: SQLite, or both under BOTH_STORES."""
    return "sqlite"


@pytest.fixture
def server_db(request, tmp_path, store_backend):
    """server_db(name) -> where a started server's store lives, on store_backend."""
    if store_backend == "sqlite":
        return lambda name="control.db": str(tmp_path / name)
    pg = request.getfixturevalue("postgres_cluster")
    urls = {}
    return lambda name="control.db": urls.setdefault(name, pg.new_schema_url())


@pytest.fixture(params=["sqlite", "postgres"])
def control_db(request, tmp_path):
    """Where a test's control store lives, on each back-end in turn:
    control_db(name) -> a SQLite path in tmp_path, or a fresh PostgreSQL schema's URL."""
    if request.param == "sqlite":
        return lambda name="control.db": str(tmp_path / name)
    pg = request.getfixturevalue("postgres_cluster")
    urls = {}
    return lambda name="control.db": urls.setdefault(name, pg.new_schema_url())
