# MicroPython board definition for the Sening xiaozhi ESP32-S3, built out of
# tree: make -C $MICROPY_DIR/ports/esp32 BOARD_DIR=<this folder> ...
# (tools/flash.py build). It is MicroPython's ESP32_GENERIC_S3 with octal
# PSRAM at 240 MHz (the SPIRAM_OCT variant docs/cmodule.md builds for), plus
# 16 MB flash and this project's partition table.
set(IDF_TARGET esp32s3)

# The partition table path must be absolute (ESP-IDF resolves a relative one
# against ports/esp32), so this fragment is written at configure time.
get_filename_component(XIAOZHI_PARTITIONS ${CMAKE_CURRENT_LIST_DIR}/../../partitions.csv ABSOLUTE)
file(WRITE ${CMAKE_BINARY_DIR}/sdkconfig.xiaozhi_partitions
    "CONFIG_PARTITION_TABLE_CUSTOM=y\nCONFIG_PARTITION_TABLE_CUSTOM_FILENAME=\"${XIAOZHI_PARTITIONS}\"\n")

# Later files override earlier ones, so the generic S3 settings come first:
# MicroPython v1.28.0's ESP32_GENERIC_S3 list plus its SPIRAM_OCT variant
# (tools/check_esp32_glue.py reads this list and fails on a missing file).
set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    boards/sdkconfig.ble
    boards/sdkconfig.spiram_sx
    boards/ESP32_GENERIC_S3/sdkconfig.board
    boards/sdkconfig.240mhz
    boards/sdkconfig.spiram_oct
    ${CMAKE_CURRENT_LIST_DIR}/sdkconfig.board
    ${CMAKE_BINARY_DIR}/sdkconfig.xiaozhi_partitions
)
