"""For the translate MCP process, a second scripted LLM it finds through
OPENAI_* (the server and its scripted LLM are testkit/fixtures.py's)."""
import pytest

from testkit.fake_llm import FakeLLM


@pytest.fixture
def translate_llm(monkeypatch):
    with FakeLLM() as llm:
        for k, v in llm.env().items():
            monkeypatch.setenv(k, v)
        yield llm
