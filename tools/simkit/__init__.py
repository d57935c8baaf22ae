"""The simulator's parts: the firmware child process, microphone input,
reply WAVs, the console's text form and the pseudo-terminal (tools/sim.py
ties them together; docs/sim.md is the contract)."""
import os
import sys

FIRMWARE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "firmware")


def use_host_hal():
    """Make the host HAL importable here, so the simulator reads the board's
    saved state (its chip, its MAC) with the board's own code."""
    for p in (FIRMWARE, os.path.join(FIRMWARE, "lib")):
        if p not in sys.path:
            sys.path.append(p)
