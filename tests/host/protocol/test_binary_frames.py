"""Binary audio frames v1/v2/v3 against the shared test vectors."""
import json

import pytest

from testkit import ROOT
from xiaozhi_server import protocol

VECTORS = json.loads((ROOT / "shared" / "protocol" / "vectors" / "binary.json").read_text())


def raw(hexstr):
    return bytes.fromhex(hexstr.replace(" ", ""))


@pytest.mark.parametrize("v", VECTORS["valid"], ids=lambda v: "v%d-%s" % (v["version"], v["hex"][:20]))
def test_valid_vectors_decode_and_encode(v):
    ftype, ts, payload = protocol.unpack_frame(v["version"], raw(v["hex"]))
    assert (ftype, ts, bytes(payload)) == (v["type"], v["timestamp"], raw(v["payload"]))
    again = protocol.pack_frame(v["version"], raw(v["payload"]), v["type"], v["timestamp"])
    assert again == raw(v["hex"])


@pytest.mark.parametrize("v", VECTORS["invalid"], ids=lambda v: "v%d-%s" % (v["version"], v["error"]))
def test_invalid_vectors_are_refused(v):
    with pytest.raises(protocol.ProtoError) as e:
        protocol.unpack_frame(v["version"], raw(v["hex"]))
    assert v["error"] in str(e.value)


def test_header_into_reuses_one_buffer():
    buf = bytearray(protocol.BIN_V2_SIZE + 8)
    n = protocol.pack_header_into(2, buf, protocol.FRAME_OPUS, 60, 8)
    buf[n:] = b"\x01" * 8
    assert protocol.unpack_frame(2, bytes(buf))[1] == 60


def test_oversized_payload_is_refused():
    with pytest.raises(protocol.ProtoError):
        protocol.pack_frame(3, b"x" * (protocol.BIN_MAX_PAYLOAD + 1))
