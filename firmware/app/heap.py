# The one owner of what the firmware holds in its heap, and when.
#
# On the board every module is frozen into flash and costs no heap. The
# MicroPython unix port (the host simulation, -X heapsize=256K) compiles each
# module from source into the heap instead, so the order matters there:
#
#   start()        firmware/main.py: the START modules, biggest first, with a
#                  collection between them, so the compiler always finds
#                  contiguous memory while the heap is young;
#   (imports)      a part needed later (the boot resolver, the OTA check, the
#                  gateway and hand-off, the alarm and command tables, the
#                  MQTT side) is a plain import inside the function that
#                  first needs it, so a reader sees the dependency; the
#                  port's allocator collects by itself when memory runs short
#                  (the 256 KB tests on the 32-bit build hold with it);
#   forget(name)   a module that has done its job: AFTER_BOOT (options,
#                  configuration, OTA) once the boot is over, the boot
#                  resolver and the alarm table after the boot used them
#                  (loaded again when needed).
#
# docs/firmware.md (Memory) and docs/entry.md (Memory) give the figures.
import gc
import sys

START = ("proto", "ws", "log", "mp3info", "audio", "app.voice.channel", "app.player.player",
         "app.voice.mcp_server", "app.entry.entry", "ds3231",
         "nvs_store", "app.voice.conversation", "app.device", "app.console", "app.main")
HOST_START = ("hal.host",)       # the simulated board, first and biggest
# Asked once per boot: their heap is worth more to the MQTT side afterwards.
AFTER_BOOT = ("app.boot.options", "app.boot.config", "app.boot.ota", "app.boot.activation",
              "app.boot", "http_client", "hal.profile")


def start():
    names = START if sys.platform == "esp32" else HOST_START + START
    for name in names:
        __import__(name)
        gc.collect()


def forget(name):
    """Drop a module (and its parent package's name for it), so the heap
    its compiled code holds can be collected."""
    sys.modules.pop(name, None)
    pkg, _, attr = name.rpartition(".")
    parent = sys.modules.get(pkg)
    if parent is not None and hasattr(parent, attr):
        delattr(parent, attr)
