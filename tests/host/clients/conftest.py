"""Server fixtures: a real server on loopback and the scripted LLM."""
from testkit.server import fake_llm, start_server  # noqa: F401
