# Error numbers shared by both HAL implementations.
#
# esp32.NVS raises OSError(-esp_err) for ESP-IDF NVS errors (MicroPython's
# check_esp_err negates the code), so the host NVS raises the very same
# numbers and app code can test e.args[0] on either.

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

NVS_NOT_FOUND = const(-0x1102)       # ESP_ERR_NVS_NOT_FOUND
NVS_NOT_ENOUGH_SPACE = const(-0x1105)  # ESP_ERR_NVS_NOT_ENOUGH_SPACE
NVS_INVALID_NAME = const(-0x1108)    # ESP_ERR_NVS_INVALID_NAME
NVS_KEY_TOO_LONG = const(-0x1109)    # ESP_ERR_NVS_KEY_TOO_LONG
NVS_INVALID_LENGTH = const(-0x110C)  # ESP_ERR_NVS_INVALID_LENGTH (buffer too small)
NVS_VALUE_TOO_LONG = const(-0x110E)  # ESP_ERR_NVS_VALUE_TOO_LONG

NAMES = {
    NVS_NOT_FOUND: "ESP_ERR_NVS_NOT_FOUND",
    NVS_NOT_ENOUGH_SPACE: "ESP_ERR_NVS_NOT_ENOUGH_SPACE",
    NVS_INVALID_NAME: "ESP_ERR_NVS_INVALID_NAME",
    NVS_KEY_TOO_LONG: "ESP_ERR_NVS_KEY_TOO_LONG",
    NVS_INVALID_LENGTH: "ESP_ERR_NVS_INVALID_LENGTH",
    NVS_VALUE_TOO_LONG: "ESP_ERR_NVS_VALUE_TOO_LONG",
}

ENODEV = const(19)  # I2C address that does not acknowledge (machine.I2C)


def nvs_error(code):
    return OSError(code, NAMES.get(code, "ESP_ERR_NVS"))


def is_not_found(exc):
    return bool(exc.args) and exc.args[0] == NVS_NOT_FOUND


class PowerCut(BaseException):
    """Raised by the host simulation when its injected power cut happens.

    Nothing after it reaches storage, exactly like a board losing power.
    A BaseException so that `except Exception` in app code cannot swallow it.
    """
