"""Connect time of the board's WebSocket client, ws:// against wss://, on
the 32-bit MicroPython unix port (its mbedtls) and on CPython.

    .venv/bin/python bench/tls_handshake.py

A websockets server on loopback, plain and TLS (an EC P-256 certificate
from a throwaway CA, the board checking it and the host name); the board's
own lib/ws.py and lib/trust.py connect ROUNDS times each way. Prints the
median and worst connect (TCP + TLS handshake + WebSocket upgrade) per
interpreter; the difference is what TLS adds per connect on this host.

Then, on MicroPython, what one open wss:// connection holds beyond an
open ws:// one: in the MicroPython heap (gc), and in the C heap (libc's
malloc_stats "in use", where the unix port's mbedtls allocates: its
record buffers and session; on the board ESP-IDF's heap holds them), and
what the shared client context (the CA parsed once) holds.
"""
import asyncio
import json
import pathlib
import ssl
import subprocess
import sys
import tempfile

from websockets.asyncio.server import serve

ROOT = pathlib.Path(__file__).resolve().parents[1]

from testkit import MICROPYTHON_BUILD  # noqa: E402
from testkit.tls_ca import TestCA  # noqa: E402

ROUNDS = 20
DRIVER = r'''
import sys, time, asyncio
sys.path[:0] = ["firmware/lib"]
import ws, trust
try:
    ticks, diff = time.ticks_ms, time.ticks_diff
except AttributeError:
    ticks, diff = (lambda: int(time.monotonic() * 1000)), (lambda a, b: a - b)
trust.configure(sys.argv[1])
async def main():
    out = {}
    for url in sys.argv[2:]:
        times = []
        for _ in range(%d):
            t = ticks()
            c = await ws.connect(url, timeout_ms=10000)
            times.append(diff(ticks(), t))
            await c.close()
        out[url.split(":")[0]] = times
    print(out)
    if sys.implementation.name == "micropython":
        import gc, ffi
        stats = ffi.open("libc.so.6").func("v", "malloc_stats", "")
        def mark(what):
            gc.collect()
            print("gc %%s %%d" %% (what, gc.mem_alloc()))
            sys.stderr.write("c " + what + "\n")
            stats()
        trust.configure("")
        mark("start")
        trust.configure(sys.argv[1])
        trust.context()
        mark("context")
        held = [await ws.connect(sys.argv[2], timeout_ms=10000, max_size=8192)]
        await held[0].send_text("x")
        mark("plain")
        held.append(await ws.connect(sys.argv[3], timeout_ms=10000, max_size=8192))
        await held[1].send_text("x")
        await asyncio.sleep_ms(200)
        mark("tls")
        for c in held:
            await c.close()
asyncio.run(main())
''' % ROUNDS


def _memory(out_lines, err):
    """{mark: (gc bytes, libc bytes in use)} from the driver's marks."""
    gc_at = {line.split()[1]: int(line.split()[2]) for line in out_lines if line.startswith("gc ")}
    c_at = {}
    for part in err.split("c ")[1:]:
        what = part.split()[0]
        total = part.split("Total (incl. mmap):")[-1]
        c_at[what] = int(total.split("in use bytes")[1].split("=")[1].split()[0])
    return {k: (gc_at[k], c_at[k]) for k in gc_at if k in c_at}


async def echo(conn):
    async for _ in conn:
        pass


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        ca = TestCA(pathlib.Path(tmp))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*ca.good)
        driver = pathlib.Path(tmp) / "driver.py"
        driver.write_text(DRIVER)
        async with serve(echo, "127.0.0.1", 0) as plain, serve(echo, "127.0.0.1", 0, ssl=ctx) as secure:
            urls = ["ws://127.0.0.1:%d/" % plain.sockets[0].getsockname()[1],
                    "wss://127.0.0.1:%d/" % secure.sockets[0].getsockname()[1]]
            memory = {}
            interps = [("CPython", [sys.executable])]
            if MICROPYTHON_BUILD.exists():
                interps.insert(0, ("MicroPython 32-bit", [str(MICROPYTHON_BUILD)]))
            print("board WebSocket connect, %d rounds each, loopback" % ROUNDS)
            for name, cmd in interps:
                p = await asyncio.create_subprocess_exec(*cmd, str(driver), ca.ca_pem, *urls, cwd=ROOT,
                                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                out, err = await p.communicate()
                lines = out.decode().strip().splitlines()
                got = json.loads(next(line for line in lines if line.startswith("{")).replace("'", '"'))
                for scheme in ("ws", "wss"):
                    t = sorted(got[scheme])
                    print("  %-20s %-4s median %4d ms, worst %4d ms" % (name, scheme, t[len(t) // 2], t[-1]))
                memory.update(_memory(lines, err.decode()))
            if memory:
                print("MicroPython 32-bit, bytes held (8 KB receive buffer, as the board's channel):")
                m = memory
                for label, i in (("gc heap", 0), ("C heap", 1)):
                    extra = (m["tls"][i] - m["plain"][i]) - (m["plain"][i] - m["context"][i])
                    print("  %-8s client context (the CA, once) %6d; an open wss:// beyond an open ws:// %6d"
                          % (label, m["context"][i] - m["start"][i], extra))


if __name__ == "__main__":
    asyncio.run(main())
