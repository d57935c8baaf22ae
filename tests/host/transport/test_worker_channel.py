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
    for msg in ({"ready": 42, "llm": "none configured"}, {"error": "no model"}, {"sessions": 0}):
        assert channel.decode(json.dumps(msg).encode(), "shard.report") == msg
