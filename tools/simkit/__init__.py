"""The simulator's parts: the firmware child process, microphone input,
reply WAVs, the console's text form and the pseudo-terminal (tools/sim.py
ties them together; docs/sim.md is the contract)."""
