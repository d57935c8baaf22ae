"""Voice activity: gate.py holds the energy gate and its options, shared by
the detectors; silero.py registers itself when the registry imports it
(registry._BUILTIN_MODULES)."""
