# Board entry point: MicroPython runs this after boot.py; on the host run it
# as `micropython firmware/main.py --state DIR` (see docs/firmware.md).
# Everything lives in app/.
import gc
import sys

# The unix port compiles every module from source into the heap: load them
# one by one, biggest first, collecting in between, so that the compiler
# always finds contiguous memory in a 256 KB heap (the board runs frozen
# bytecode and needs none of this, but it costs nothing there).
_ORDER = ("proto", "ws", "log", "mp3info", "audio", "app.protocol_client", "app.player",
          "app.mcp_server", "app.http", "app.ota", "app.entry", "ds3231", "nvs_store",
          "app.device", "app.console", "app.main")
if sys.platform != "esp32":
    _ORDER = ("hal.host",) + _ORDER
for _name in _ORDER:
    __import__(_name)
    gc.collect()

from app.main import main  # noqa: E402

main()
