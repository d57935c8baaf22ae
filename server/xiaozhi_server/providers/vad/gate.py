"""The cheap first stage in front of silero: a window goes to the model only
where speech is possible (why and what it saves: docs/providers.md).

The gate follows each stream's floor (the energy of its quietest recent
windows: it drops to a quieter window at once and creeps up by
`RISE_DB_S`, so it follows a fan switched on within seconds but not a
sentence) and sends a window to the model when

- it is `open_db` above the floor: any sound (the model, not the gate,
  decides what is speech);
- it is one of the `hang` windows after such a window, so the model hears
  a sound die away;
- or the model's last verdict was at least `hold`: while the model still
  hears speech, or might, the gate never cuts it short.

Any other window scores 0.0 without a model call. The model's recurrent
state is carried over skipped windows, not reset (a reset state misjudges
an onset's first windows), and the context (the last 64 samples) is kept
current while windows are skipped.
"""

RISE_DB_S = 3.0           # how fast the floor follows a louder background
FLOOR_MIN = 1e-10         # -100 dBFS: digital silence is a floor too


# The VAD config keys GateConfig reads (the VAD provider declares them as its own).
GATE_OPTIONS = ("gate", "gate_open_db", "gate_hang_ms", "gate_hold")


class GateConfig:
    """Read from the VAD's config: `gate` (true), `gate_open_db` (9),
    `gate_hang_ms` (256), `gate_hold` (0.1)."""

    def __init__(self, config, window_ms):
        self.enabled = bool(config.get("gate", True))
        open_db = float(config.get("gate_open_db", 9.0))
        hang_ms = float(config.get("gate_hang_ms", 256))
        self.hold = float(config.get("gate_hold", 0.1))
        if open_db < 0 or hang_ms < 0 or not 0.0 <= self.hold <= 1.0:
            raise ValueError("VAD gate: gate_open_db and gate_hang_ms must be >= 0 and gate_hold 0..1, "
                             "not %r, %r, %r" % (open_db, hang_ms, self.hold))
        self.ratio = 10.0 ** (open_db / 10.0)
        self.hang = int(round(hang_ms / window_ms))
        self.rise = 10.0 ** (RISE_DB_S / 10.0 * window_ms / 1000.0)

    def gate(self):
        return SpeechGate(self) if self.enabled else None


class SpeechGate:
    """One stream's gate: `admit(energy)` per window, in order; `heard(p)`
    with the model's verdict on each admitted window."""

    __slots__ = ("_cfg", "floor", "_hang", "_last")

    def __init__(self, cfg):
        self._cfg = cfg
        self.reset()

    def reset(self):
        self.floor = None     # no floor yet: the first windows go to the model
        self._hang = 0
        self._last = 0.0

    def admit(self, energy):
        """Whether the window with this mean square (samples in [-1, 1]) needs the model."""
        cfg = self._cfg
        energy += FLOOR_MIN
        floor = self.floor
        loud = floor is None or energy > floor * cfg.ratio
        self.floor = energy if floor is None or energy < floor else min(energy, floor * cfg.rise)
        if loud:
            self._hang = cfg.hang
            return True
        if self._hang > 0:
            self._hang -= 1
            return True
        return self._last >= cfg.hold

    def heard(self, p):
        self._last = p


def energies(windows):
    """Mean square of each window of a float32 [k, window] array."""
    import numpy as np
    return np.einsum("ij,ij->i", windows, windows) / windows.shape[1]
