"""Voices: base.py holds TtsProvider and TtsError; the providers beside it
register themselves when the registry imports them (registry._BUILTIN_MODULES).
Nothing is imported here, so importing one module does not load the others'
libraries."""
