"""Raw-socket clients for the edge tests: slow, flooding or malformed
clients, over real TCP to a real server on loopback."""
import asyncio

from testkit.server import server_config

HOST = "127.0.0.1"


def edge_config(llm_url=None, **limits):
    cfg = server_config(llm_url)
    cfg["limits"].update(limits)
    return cfg


async def open_slow(port, first=b"GET /health HTTP/1.1\r\nHost: x\r\n"):
    """A connection that sends the start of a request and never finishes it."""
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(first)
    await writer.drain()
    return reader, writer


async def closed_by_server(reader, timeout=30):
    """Wait until the server closes this connection; what it sent before that."""
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    except ConnectionResetError:
        return b""


def close_all(conns):
    for _reader, writer in conns:
        writer.close()
