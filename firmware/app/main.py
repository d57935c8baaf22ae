# Start the device: board, configuration (app/boot/options.py), console,
# then the device loop.
import sys

import asyncio

from app import console
from app.device import Device
from app.events import Bus, json_line_printer


def _write(text):
    sys.stdout.write(text)
    if hasattr(sys.stdout, "flush"):
        sys.stdout.flush()


async def amain(argv):
    # Plain import: heap.start() (firmware/main.py) collected just before;
    # the options are dropped after boot (heap.AFTER_BOOT).
    from app.boot import options
    opts, board, cfg = options.start(argv)
    bus = Bus()
    if opts["json"]:
        bus.listen(json_line_printer(_write))
    board.start()
    dev = Device(board, cfg, bus)
    if opts["console"]:
        asyncio.create_task(console.run(dev))
    try:
        await dev.run()
    finally:
        board.stop()


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    asyncio.run(amain(argv))
