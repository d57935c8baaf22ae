"""Speech recognizers: base.py holds the stream shape every one offers and
the error they raise; the providers beside it register themselves when the
registry imports them (registry._BUILTIN_MODULES). Nothing is imported here,
so importing one module does not load the others' libraries."""
