# Frozen-module manifest of the unix port build that runs the firmware as
# the board does (make micropython-frozen, mk/micropython.mk): the board's
# manifest with the port's standard variant (its frozen asyncio) in place
# of the board's, and the host HAL in place of hal/esp32. A build-time
# script run by CPython, like manifest.py.
include("manifest.py", port_manifest="$(PORT_DIR)/variants/standard/manifest.py", hal="host",
        version_dir="../build/micropython/frozen")

# The board's Voice (hal/esp32/voice.py) too, as the top-level `voice`: the
# unix port has no hal.esp32 package (its __init__ imports the board), and
# bench/heap_probe.py holds one over the speech engine's host stand-in so
# the heap bench counts the speech engine's Python side.
module("voice.py", base_path="hal/esp32")
