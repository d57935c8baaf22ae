"""`make bench ARGS=wake`: what the nearest-device arbitration adds to a wake
word (docs/server.md, Nearest device answers), on the SQLite store and on
a PostgreSQL store (a cluster of its own on loopback, as the tests start it).

Per wake, the time WakeArbiter.claim() takes, on real time with the
default 400 ms window: a household device with a level (waits out the
window: the figure is what it adds beyond the window), a device alone in
its household, and a stock device (no level) first in its round.
"""
import asyncio
import os
import tempfile
import time


from testkit.postgres import Postgres  # noqa: E402
from xiaozhi_server.store.store import Store  # noqa: E402
from xiaozhi_server.fleet.wake import WakeArbiter  # noqa: E402

from .report import Figure, percentile  # noqa: E402

WINDOW_S = 0.4


async def _claims(target, label, wakes):
    store = await Store(target).open()
    try:
        await store.wake.set_household("home", ["near", "far"])
        await store.wake.set_household("solo", ["alone"])
        arbiter = WakeArbiter(store.wake, WINDOW_S)
        kinds = {"household, with level, beyond the window": ("near", -20.0, WINDOW_S),
                 "alone in its household": ("alone", -20.0, 0.0),
                 "stock (no level), first in its round": ("far", None, 0.0)}
        took = {k: [] for k in kinds}
        for _ in range(wakes):
            for kind, (device, level, window) in kinds.items():
                t = time.monotonic()
                await arbiter.claim(device, level)
                took[kind].append(time.monotonic() - t - window)
                await asyncio.sleep(WINDOW_S + 0.05)    # the next claim opens a round of its own
        return [Figure("%s: %s, p50" % (label, kind), percentile(v, 50) * 1000, "ms",
                       note="p99 %.1f ms, %d wakes" % (percentile(v, 99) * 1000, len(v)))
                for kind, v in took.items()]
    finally:
        await store.close()


def run_wake(wakes=30):
    figures = asyncio.run(_claims(os.path.join(tempfile.mkdtemp(), "control.db"), "SQLite", wakes))
    pg = Postgres().start()
    try:
        figures += asyncio.run(_claims(pg.new_schema_url(), "PostgreSQL", wakes))
    finally:
        pg.stop()
    return figures
