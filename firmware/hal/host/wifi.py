# Host Wi-Fi: the host's loopback network stands for the access point.
# `reachable=False` simulates a network that never comes up.
import binascii
import os

from hal.host import fs


class HostWifi:
    def __init__(self, state_dir, clock, reachable=True):
        self._clock = clock
        self.reachable = reachable
        self.ssid = None
        self._connected = False
        self._mac = self._load_mac(fs.join(state_dir, "mac"))

    def _load_mac(self, path):
        if fs.exists(path):
            return binascii.unhexlify(fs.read_bytes(path).strip())
        mac = bytearray(os.urandom(6))
        mac[0] = (mac[0] & 0xFC) | 0x02  # locally administered, unicast
        fs.write_atomic(path, binascii.hexlify(mac))
        return bytes(mac)

    def mac(self):
        return self._mac

    def mac_str(self):
        return ":".join("%02x" % b for b in self._mac)

    async def connect(self, ssid, password="", timeout_ms=15000):
        """True when associated; False after timeout_ms otherwise."""
        self.ssid = ssid
        if not self.reachable:
            await self._clock.sleep_ms(timeout_ms)
            return False
        await self._clock.sleep_ms(1)
        self._connected = True
        return True

    def isconnected(self):
        return self._connected

    def disconnect(self):
        self._connected = False

    def ip(self):
        return "127.0.0.1" if self._connected else None

    def rssi(self):
        return -50 if self._connected else None
