"""Volcengine (Doubao) speech services' binary WebSocket framing, shared by
their streaming ASR and TTS (asr/volcengine.py, tts/volcengine.py).

Every message is one binary WebSocket frame (integers big-endian):

    byte 0: protocol version (4 bits, 1) | header size in 4-byte words (4 bits, 1)
    byte 1: message type (4 bits)        | message-type-specific flags (4 bits)
    byte 2: serialization (4 bits: 0 raw, 1 JSON) | compression (4 bits: 0 none, 1 gzip)
    byte 3: reserved
    [header extension: (header size - 1) * 4 bytes, skipped]
    [sequence: int32, when flags bit 0 is set]
    [error code: uint32, error messages only]
    payload size: uint32, then the payload (compressed as byte 2 says)

Flags: bit 0 = a sequence number follows the header; bit 1 = the last
message of its direction (its sequence, when present, is negative).
"""
import gzip
import json
import os
import struct

from .ws_log import connection_logger

FULL_CLIENT_REQUEST = 0b0001
AUDIO_ONLY_REQUEST = 0b0010
FULL_SERVER_RESPONSE = 0b1001
AUDIO_ONLY_RESPONSE = 0b1011
FRONTEND_RESPONSE = 0b1100
ERROR_RESPONSE = 0b1111

FLAG_SEQUENCE = 0b0001
FLAG_LAST = 0b0010

RAW, JSON = 0, 1
NO_COMPRESSION, GZIP = 0, 1


# The connections' logger: no handshake header (the token) at any level.
WS_LOG = connection_logger("volcengine")


def volc_token(config, default_env):
    """The access token from the config or the environment (never logged).
    Here, beside the framing, because the ASR and the TTS read it alike."""
    return config.get("token") or os.environ.get(config.get("token_env") or default_env) or ""


class FrameError(ValueError):
    """A frame that is not this protocol."""


def client_frame(message_type, payload, last=False, serialization=JSON):
    """A client message with no sequence number, its payload gzipped."""
    if serialization == JSON:
        payload = json.dumps(payload, ensure_ascii=False).encode()
    body = gzip.compress(payload, compresslevel=1)
    header = bytes([0x11, (message_type << 4) | (FLAG_LAST if last else 0), (serialization << 4) | GZIP, 0])
    return header + struct.pack(">I", len(body)) + body


class ServerFrame:
    """One decoded server message. `payload` is a dict (JSON), bytes (raw),
    or, for an error message, whatever its payload held (text or JSON)."""

    __slots__ = ("type", "flags", "sequence", "code", "payload")

    def __init__(self, type_, flags, sequence, code, payload):
        self.type = type_
        self.flags = flags
        self.sequence = sequence
        self.code = code
        self.payload = payload

    @property
    def last(self):
        return bool(self.flags & FLAG_LAST) or (self.sequence is not None and self.sequence < 0)

    def error_text(self):
        """The message of an error frame, or of a JSON answer that carries one."""
        p = self.payload
        if isinstance(p, dict):
            return str(p.get("message") or p.get("error") or json.dumps(p, ensure_ascii=False)[:200])
        if isinstance(p, (bytes, bytearray)):
            return bytes(p[:200]).decode("utf-8", "replace")
        return str(p)[:200]


def parse_server_frame(data):
    """Decode one binary frame from the service; FrameError when it is not the protocol."""
    if not isinstance(data, (bytes, bytearray)):
        raise FrameError("a text frame, not the binary protocol: %r" % (data[:60],))
    if len(data) < 4:
        raise FrameError("a frame of %d bytes, shorter than the header" % len(data))
    version, words = data[0] >> 4, data[0] & 0x0F
    if version != 1 or words < 1:
        raise FrameError("protocol version %d, header size %d: not this protocol" % (version, words))
    type_, flags = data[1] >> 4, data[1] & 0x0F
    serialization, compression = data[2] >> 4, data[2] & 0x0F
    pos = words * 4
    sequence = code = None
    try:
        if flags & FLAG_SEQUENCE and type_ != ERROR_RESPONSE:
            sequence = struct.unpack_from(">i", data, pos)[0]
            pos += 4
        if type_ == ERROR_RESPONSE:
            code = struct.unpack_from(">I", data, pos)[0]
            pos += 4
        if type_ == AUDIO_ONLY_RESPONSE and flags == 0 and len(data) == pos:
            return ServerFrame(type_, flags, None, None, b"")   # a bare ACK
        size = struct.unpack_from(">I", data, pos)[0]
        pos += 4
    except struct.error:
        raise FrameError("a %d-byte frame cut inside its fields" % len(data))
    body = bytes(data[pos:pos + size])
    if len(body) != size:
        raise FrameError("payload size %d, but %d bytes follow" % (size, len(body)))
    if compression == GZIP and body:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as exc:
            raise FrameError("payload not gzip as its header says: %s" % exc)
    elif compression not in (NO_COMPRESSION, GZIP):
        raise FrameError("unknown compression %d" % compression)
    payload = body
    # Audio is raw bytes whatever byte 2 says (the doc: no serialization for it).
    if type_ != AUDIO_ONLY_RESPONSE and (serialization == JSON or type_ == ERROR_RESPONSE):
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            if type_ != ERROR_RESPONSE:
                raise FrameError("payload not JSON as its header says: %r" % body[:60])
            payload = body   # an error message may be plain text
    if type_ == FULL_SERVER_RESPONSE and not isinstance(payload, dict):
        raise FrameError("a response whose payload is not a JSON object")
    return ServerFrame(type_, flags, sequence, code, payload)
