# Entry point for USER_C_MODULES on CMake ports (the ESP32 port):
#   make -C ports/esp32 BOARD=ESP32_GENERIC_S3 BOARD_VARIANT=SPIRAM_OCT \
#        USER_C_MODULES=<repo>/firmware/cmodules/micropython.cmake
# Each module adds its own INTERFACE library and links it into `usermod`.
include(${CMAKE_CURRENT_LIST_DIR}/xzaudio/micropython.cmake)
