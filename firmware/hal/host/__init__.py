# Host simulation of the Sening ESP32-S3 board (see docs/hal.md).
# `hal.board()` builds it; tools and tests may call `board(...)` with options.
import sys

# The MicroPython unix port drops its frozen modules (asyncio among them)
# from sys.path when MICROPYPATH is set, which is how the host runs the
# firmware: put them back.
if sys.implementation.name == "micropython" and ".frozen" not in sys.path:
    sys.path.append(".frozen")

from hal.host.board import board, HostBoard  # noqa: E402,F401
