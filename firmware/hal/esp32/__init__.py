# The real Sening ESP32-S3 board. Imports of machine/esp32/network live only
# in this package, so the rest of the firmware runs unchanged on the host.
from hal.esp32.board import board, Esp32Board  # noqa: F401
