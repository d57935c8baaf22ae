"""The primary's channel to a worker survives any line the worker writes
(issue 26): before, a JSON line that was not an object, or one over the
channel's limit, raised out of the primary's watcher, and the worker was
no longer watched (nor started again when it died). Lines now have a
schema (shared/protocol/schemas/shard/), and a bad one is skipped with a
log line."""
import asyncio
import json
import logging
import socket

from xiaozhi_server.shard import channel, pool

BAD_LINES = [b"not json\n", b"[1, 2]\n", b'"sessions"\n', b'{"sessions": "3"}\n', b'{"sessions": -1}\n',
             b'{"ready": 5, "sessions": 1}\n', b'{"unknown": 1}\n', b'{"sessions": 1' + b"\n",
             b'{"sessions": 2, "pad": "' + b"x" * (channel.LIMIT + 10) + b'"}\n', b"\xff\xfe\n"]


class _Exited:
    returncode = -9

    async def wait(self):
        return -9


async def test_bad_lines_are_skipped_and_the_primary_keeps_watching_the_worker(caplog):
    caplog.set_level(logging.WARNING)
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=ours, limit=channel.LIMIT)
    w = pool._Worker(1, _Exited(), reader, writer)
    workers = pool.WorkerPool({"server": {"ws_port": 0}}, 1)
    watching = asyncio.create_task(workers._watch(w))
    _r, worker_side = await asyncio.open_unix_connection(sock=theirs)
    for line in BAD_LINES:
        worker_side.write(line)
    worker_side.write(b'{"sessions": 3}\n')
    await worker_side.drain()
    worker_side.write(b'{"sessions": 4')          # cut short by the worker's end
    worker_side.close()
    assert await asyncio.wait_for(watching, 30) == -9     # watched to the end: its exit code
    assert w.sessions == 3
    skipped = [r.getMessage() for r in caplog.records if "a line skipped" in r.getMessage()]
    assert skipped and all(len(m) < 400 for m in skipped)


def test_every_line_the_pool_and_workers_send_fits_its_schema():
    settings = pool.WorkerPool({"server": {"ws_port": 0, "host": "127.0.0.1"}, "limits": {}, "session": {}}, 2)
    assert channel.decode(json.dumps(settings._settings(1)).encode(), "shard.settings")["worker"] == 1
    for msg in ({"ready": 42, "llm": "none configured"}, {"error": "no model"}, {"sessions": 0},
                {"claim": {"device": "kid1", "session": "s1"}, "at": 12.5}):
        assert channel.decode(json.dumps(msg).encode(), "shard.report") == msg


async def test_a_claim_on_one_worker_releases_the_devices_older_session_on_another():
    workers = pool.WorkerPool({"server": {"ws_port": 0}}, 2)
    sides = {}
    for wid in (1, 2):
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        workers._workers[wid] = pool._Worker(wid, _Exited(), reader, writer)
        sides[wid] = await asyncio.open_unix_connection(sock=theirs)
    workers._claimed(1, "kid1", "s-old")
    workers._claimed(1, "kid2", "s-other")
    workers._claimed(1, "kid1", "s-newer")      # same worker: it ends its own older session
    workers._claimed(2, "kid1", "s-newest")     # another worker: worker 1 is told
    line = await asyncio.wait_for(sides[1][0].readline(), 10)
    assert channel.decode(line, "shard.command") == {"release": {"device": "kid1", "session": "s-newer"}}
    for w in workers._workers.values():
        w.writer.close()
    assert await sides[1][0].read() == b"" and await sides[2][0].read() == b""   # nothing else was sent


async def test_a_claim_that_arrives_late_releases_its_own_session_not_the_newer_one():
    """Each worker reports on its own socket: a busy worker's claim may reach
    the primary after a newer claim of the same device from another worker.
    The older session is the one released, whichever line came first."""
    workers = pool.WorkerPool({"server": {"ws_port": 0}}, 2)
    sides = {}
    for wid in (1, 2):
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        workers._workers[wid] = pool._Worker(wid, _Exited(), reader, writer)
        sides[wid] = await asyncio.open_unix_connection(sock=theirs)
    workers._claimed(2, "kid1", "s-second", at=20.0)     # the newer hello, reported first
    workers._claimed(1, "kid1", "s-first", at=10.0)      # the older one, reported late
    line = await asyncio.wait_for(sides[1][0].readline(), 10)
    assert channel.decode(line, "shard.command") == {"release": {"device": "kid1", "session": "s-first"}}
    workers._claimed(1, "kid1", "s-third", at=30.0)      # a newer one again: the second is released
    line = await asyncio.wait_for(sides[2][0].readline(), 10)
    assert channel.decode(line, "shard.command") == {"release": {"device": "kid1", "session": "s-second"}}
    for w in workers._workers.values():
        w.writer.close()
    assert await sides[1][0].read() == b"" and await sides[2][0].read() == b""   # nothing else was sent
