// Sening xiaozhi ESP32-S3. The I2C pins are the DS3231 bus and must equal
// i2c_scl / i2c_sda in firmware/hal/esp32/board.py PINS (a host test
// compares them); docs/hardware.md says which numbers are still unverified.
#define MICROPY_HW_BOARD_NAME               "Sening xiaozhi ESP32-S3"
#define MICROPY_HW_MCU_NAME                 "ESP32-S3"

// The REPL on UART0 too, for boards seen through a CH34x/CP210x bridge.
#define MICROPY_HW_ENABLE_UART_REPL         (1)

#define MICROPY_HW_I2C0_SCL                 (2)
#define MICROPY_HW_I2C0_SDA                 (1)
