"""Server fixtures for the edge tests."""
from testkit.server import fake_llm, start_server  # noqa: F401
