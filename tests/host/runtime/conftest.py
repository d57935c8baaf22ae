"""Server fixtures: a real server on loopback and the scripted LLM; for the
translate MCP process, a second scripted LLM it finds through OPENAI_*."""
import pytest

from testkit.fake_llm import FakeLLM
from testkit.server import fake_llm, start_server  # noqa: F401


@pytest.fixture
def translate_llm(monkeypatch):
    with FakeLLM() as llm:
        for k, v in llm.env().items():
            monkeypatch.setenv(k, v)
        yield llm
