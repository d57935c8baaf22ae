# Board Wi-Fi station on network.WLAN.
import asyncio
import network


class Wifi:
    def __init__(self):
        self._wlan = network.WLAN(network.STA_IF)
        self._wlan.active(True)
        self.ssid = None

    def mac(self):
        return self._wlan.config("mac")

    def mac_str(self):
        return ":".join("%02x" % b for b in self.mac())

    async def connect(self, ssid, password="", timeout_ms=15000):
        """True when associated with an IP; False after timeout_ms."""
        self.ssid = ssid
        if not self._wlan.isconnected():
            self._wlan.connect(ssid, password)
        waited = 0
        while not self._wlan.isconnected():
            if waited >= timeout_ms:
                self._wlan.disconnect()
                return False
            await asyncio.sleep_ms(100)
            waited += 100
        return True

    def isconnected(self):
        return self._wlan.isconnected()

    def disconnect(self):
        self._wlan.disconnect()

    def ip(self):
        return self._wlan.ifconfig()[0] if self._wlan.isconnected() else None

    def rssi(self):
        return self._wlan.status("rssi") if self._wlan.isconnected() else None
