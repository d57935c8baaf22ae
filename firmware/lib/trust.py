# The board's trust in its server: one TLS client context that requires the
# server's certificate to chain to the CA bundle named in config.json
# (`tls.ca_file`), for wss://, mqtts:// and https:// alike.
#
#   trust.configure("/ca.pem")          # at boot, from config.json (PEM or DER)
#   ctx = trust.context()               # the SSLContext; TrustError without a CA bundle
#   why = trust.refusal(exc)            # the reason when exc is a refused certificate, else None
#   trust.plain("ws", host, port)       # TrustError: a board with a CA bundle speaks no plain
#
# A secure URL is never tried in plain: without a CA bundle the connection
# is not made at all (TrustError), and a certificate that is wrong (another
# host name, another CA, self-signed, expired) ends the connect with the
# reason. MicroPython's mbedtls reads DER only (the unix and ESP32 builds
# leave PEM parsing out): a PEM bundle is decoded here, one certificate at
# a time. The context is made once and shared by every connection (the CA
# is parsed once; each connection adds only its own TLS state).
import sys

_MP = sys.implementation.name == "micropython"
_BEGIN = "-----BEGIN CERTIFICATE-----"
_END = "-----END CERTIFICATE-----"

_ca_file = ""
_allow_plain = False
_ctx = None


class TrustError(ValueError):
    """No usable CA bundle: a secure connection cannot be checked, so it is not made."""


def configure(ca_file, allow_plain=False):
    global _ca_file, _allow_plain, _ctx
    _ca_file = ca_file or ""
    _allow_plain = bool(allow_plain)
    _ctx = None


def plain(scheme, host, port):
    """Before a plain (http, ws, mqtt) connection: a board given a CA bundle
    expects its server to be checked, so a plain URL (typed wrong, or handed
    out by a server someone else answers for) would carry its token and
    credentials in the clear. Refused unless config.json says
    tls.allow_plain: true (a server on the board's own network, say)."""
    if _ca_file and not _allow_plain:
        raise TrustError("plain %s:// to %s:%d refused: this board has a CA bundle, so it speaks only TLS "
                         "(config.json tls.allow_plain: true allows plain)" % (scheme, host, port))


def _der_certs(data):
    # The certificates of a PEM bundle as DER; DER is passed through.
    if _BEGIN.encode() not in data:
        return [data]
    import binascii
    out = []
    for block in data.decode().split(_BEGIN)[1:]:
        out.append(binascii.a2b_base64(block.split(_END)[0]))
    return out


def context():
    """The shared client context; TrustError when no CA bundle can be read."""
    global _ctx
    if _ctx is not None:
        return _ctx
    if not _ca_file:
        raise TrustError("no CA bundle for TLS (config.json tls.ca_file): a secure server cannot be checked")
    import ssl
    try:
        with open(_ca_file, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TrustError("cannot read the CA bundle %s: %s" % (_ca_file, e))
    if _MP:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.verify_mode = ssl.CERT_REQUIRED
        try:
            for der in _der_certs(data):
                ctx.load_verify_locations(cadata=der)
        except (ValueError, OSError) as e:
            raise TrustError("the CA bundle %s holds no usable certificate: %s" % (_ca_file, e))
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # CERT_REQUIRED and host name checks
        try:
            ctx.load_verify_locations(cadata=data.decode() if _BEGIN.encode() in data else data)
        except (ValueError, ssl.SSLError) as e:
            raise TrustError("the CA bundle %s holds no usable certificate: %s" % (_ca_file, e))
    _ctx = ctx
    return ctx


def refusal(exc):
    """Why the server's certificate was refused, when `exc` (raised while
    connecting to a secure URL) says so; None for any other failure."""
    if isinstance(exc, TrustError):
        return str(exc)
    if _MP:
        # mbedtls reports a certificate it refuses as a ValueError with its
        # verify text ("The certificate validity has expired", ...).
        return str(exc).strip().replace("\n", "; ") if type(exc) is ValueError else None
    import ssl
    if isinstance(exc, ssl.SSLCertVerificationError):
        return exc.verify_message or str(exc)
    return None
