"""Language models: events.py holds what a model's stream yields, sse.py the
server-sent-events reading the HTTP ones share; the providers beside them
register themselves when the registry imports them (registry._BUILTIN_MODULES)."""
