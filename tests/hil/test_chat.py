"""Boot to chat: the board boots, connects, and the opener is heard."""
import os

from testkit import audio


def test_boot_to_chat_opener_is_heard(console, target):
    boot = console.event("boot", timeout=30)
    assert boot["wake_cause"] in ("power_on", "reset")
    console.event("state", state="listening", timeout=20)
    opener = console.event("subtitle", role="assistant", timeout=30)
    assert opener["text"].strip()
    if target.simulated:  # the simulated speaker writes each reply to a WAV
        reply = console.event("reply", timeout=30)
        with open(reply["wav"], "rb") as f:
            pcm, rate = audio.read_wav(f.read())
        assert os.path.dirname(reply["wav"]).startswith(target.board.state_dir)
        assert audio.seconds(pcm, rate) > 0.5 and audio.voiced_fraction(pcm, rate) > 0.3
    console.event("state", state="listening", timeout=20)  # back to listening for the child
