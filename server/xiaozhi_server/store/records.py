"""The one connection the control store's record classes share, and the
base they stand on.

    connection = Connection("var/control.db")
    devices = DeviceRecords(connection)       # every part: self._db, await self._run(fn, *args)

One worker thread owns the connection: every call of every part runs
there, so the event loop never waits on the database and no connection
sees two threads. store.Store opens it (connects and migrates) and closes
it; a part only runs its statements on it.
"""
import asyncio
from concurrent.futures import ThreadPoolExecutor


class Connection:
    def __init__(self, target):
        self.target = str(target)
        self.db = None      # an sql.SqliteDatabase / PostgresDatabase once the store is open
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="control-db")

    async def run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    async def close(self):
        if self.db is not None:
            await self.run(self.db.close)
            self.db = None
        self._worker.shutdown(wait=True)


class Records:
    """A family of tables' calls over the shared connection."""

    def __init__(self, connection):
        self._connection = connection

    @property
    def _db(self):
        return self._connection.db

    def _run(self, fn, *args):
        return self._connection.run(fn, *args)
