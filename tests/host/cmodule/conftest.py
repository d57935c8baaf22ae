"""Builds the C audio core once per test session and generates the audio
and MP3 inputs the tests share."""
import shutil
import subprocess

import pytest

from testkit import xzcore


@pytest.fixture(scope="session")
def core():
    xzcore.build()
    return xzcore.load()


def _run(cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def speech(tmp_path_factory):
    """Real speech with pauses (espeak-ng), as raw int16 mono at 16 and 24 kHz.
    The pauses are what lets DTX show up in the packets."""
    d = tmp_path_factory.mktemp("speech")
    wav = d / "speech.wav"
    _run(["espeak-ng", "-v", "en", "-s", "150", "-g", "30", "-w", str(wav),
          "Hello, little friend. Shall we read a story together? Let us begin."])
    out = {}
    for rate in (16000, 24000):
        raw = d / ("speech%d.raw" % rate)
        # Half a second of silence on both ends: a child's pause before speaking.
        _run(["sox", str(wav), "-r", str(rate), "-c", "1", "-b", "16", "-e", "signed",
              "-t", "raw", str(raw), "pad", "0.5", "0.5"])
        out[rate] = raw.read_bytes()
    return out


@pytest.fixture(scope="session")
def tools_for_mp3():
    for name in ("sox", "lame"):
        if not shutil.which(name):
            pytest.fail("%s is missing: it is in tools/apt-packages.txt, run make setup" % name)
