"""Device credentials derived from the server secret.

One random server secret (a 0600 file in the control plane's state
directory, shared by nodes through the store) derives the server's own
broker password, the broker admin's unless one is configured, and each
device's WebSocket token:

    creds = Credentials("var/mqtt").load()
    creds.mqtt_user(device_id), creds.device_token(device_id)
    creds.server_password(), creds.admin_password()

A device's broker password is not derived: it is random, made when the
device is provisioned and kept only by the broker (broker/dynsec.py).
mqtt_password() survives for brokers that check nothing (no admin login
configured) and for devices provisioned before the broker kept logins,
whose boards still hold it (dynsec.py moves them over at start).

mosquitto's user names cannot hold every character of a device id (a MAC
has colons), so a device's MQTT user name is its id with every character
outside [A-Za-z0-9._-] percent-encoded, after "d.".
"""
import base64
import hashlib
import hmac
import os
import secrets

SERVER_USER = "xiaozhi-server"
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# mosquitto's own PBKDF2 parameters ($7$): SHA-512, 101 rounds, 12-byte salt.
_PBKDF2_ROUNDS = 101


def mqtt_user(device_id):
    return "d." + "".join(c if c in _SAFE else "".join("%%%02X" % b for b in c.encode()) for c in device_id)


def _hash(password):
    salt = os.urandom(12)
    dk = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, _PBKDF2_ROUNDS, 64)
    return "$7$%d$%s$%s" % (_PBKDF2_ROUNDS, base64.b64encode(salt).decode(), base64.b64encode(dk).decode())


def write_private(path, text):
    """Write a file only this user can read, replacing the old one at once."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


class Credentials:
    def __init__(self, state_dir):
        self.dir = state_dir
        self.secret_path = os.path.join(state_dir, "secret")
        self.dynsec_path = os.path.join(state_dir, "dynamic-security.json")
        self._secret = None

    def load(self):
        """Read the server secret, making one (256 random bits) the first time."""
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        try:
            fd = os.open(self.secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        with open(self.secret_path) as f:
            text = f.read().strip()
        if len(text) < 32:
            raise ValueError("%s holds no usable secret: delete it to make a new one "
                             "(every device then needs new credentials)" % self.secret_path)
        self._secret = text.encode()
        return self

    def secret_text(self):
        return self._secret.decode()

    def adopt(self, text):
        """Use this secret (the one nodes share) from now on, and keep it in the file."""
        write_private(self.secret_path, text + "\n")
        self._secret = text.encode()

    def _derive(self, purpose, device_id, n=32):
        mac = hmac.new(self._secret, ("%s\0%s" % (purpose, device_id)).encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")[:n]

    # ---- what a device and the server present ----

    mqtt_user = staticmethod(mqtt_user)

    def mqtt_password(self, device_id):
        return self._derive("mqtt", device_id)

    def server_password(self):
        return self._derive("mqtt-server", "")

    def admin_password(self):
        return self._derive("mqtt-admin", "")

    def device_token(self, device_id):
        return "xzd1." + self._derive("ws", device_id, 43)

    def token_valid(self, device_id, token):
        if not device_id or not token or not token.startswith("xzd1."):
            return False
        return hmac.compare_digest(token.encode(), self.device_token(device_id).encode())
