"""The line protocol between the primary and a worker: one JSON object a
line over their socketpair, each checked against shared/protocol's shard
schemas: `shard.settings` (the primary's first line), then `shard.command`
from the primary and `shard.report` from a worker.

    await send(writer, "shard.report", {"sessions": 3})
    async for msg in lines(reader, "shard.report", throttle):
        ...

A line that is not JSON, does not fit its schema, is cut short or is
longer than the channel's limit is skipped with a log line (a few per
interval, then a summary): one bad line never ends the channel, which is
also the worker's lifeline. Only end-of-file (or a socket error) ends it.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, AsyncIterator

from .. import protocol as proto
from ..logthrottle import LogThrottle

log = logging.getLogger(__name__)

LIMIT = 1 << 20     # bytes a line may hold (the settings carry the whole config)


class BadLine(Exception):
    pass


def decode(line: bytes, schema_id: str) -> dict:
    """One line as its message; BadLine saying why not."""
    try:
        msg = json.loads(line)
    except ValueError as e:
        raise BadLine("not JSON (%s): %r" % (e, line[:60]))
    err = proto.validate(schema_id, msg)
    if err:
        raise BadLine(err)
    return msg


def write(writer: asyncio.StreamWriter, schema_id: str, msg: dict[str, Any]) -> None:
    """Queue one message; a message that does not fit its schema is our bug: ValueError."""
    err = proto.validate(schema_id, msg)
    if err:
        raise ValueError("not sending a %s line: %s" % (schema_id, err))
    if not writer.is_closing():
        writer.write(json.dumps(msg).encode() + b"\n")


async def send(writer: asyncio.StreamWriter, schema_id: str, msg: dict[str, Any]) -> None:
    """Write one message and wait until the channel took it."""
    write(writer, schema_id, msg)
    await writer.drain()


async def read_one(reader: asyncio.StreamReader, schema_id: str) -> dict | None:
    """The next line as a message; None at end-of-file. BadLine for a bad one."""
    try:
        line = await reader.readline()
    except ValueError:      # longer than the limit: the reader dropped it
        raise BadLine("a line over %d bytes" % LIMIT)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise BadLine("a line cut short by the end of the channel: %r" % line[:60])
    return decode(line, schema_id)


async def lines(reader: asyncio.StreamReader, schema_id: str, throttle: LogThrottle,
                who: str = "channel") -> AsyncIterator[dict]:
    """Every good message until end-of-file or a socket error; bad lines are logged and skipped."""
    while True:
        try:
            msg = await read_one(reader, schema_id)
        except BadLine as e:
            throttle.log(logging.WARNING, ("bad line", who), "%s: a line skipped: %s", who, e)
            continue
        except (ConnectionError, OSError):
            return
        if msg is None:
            return
        yield msg
