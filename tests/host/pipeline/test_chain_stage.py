"""A new stage of the voice chain is one entry in pipeline/chain.py: here a
safety filter that checks the child's words and the model's reply, added
to WORDS and SENTENCES, is heard over the real WebSocket."""
import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.pipeline import chain


async def mask_words(text):
    """The child's words: a surname is not sent on to the model."""
    return text.replace("Zhang", "[name]")


async def soften(text):
    """The model's reply: a sentence with a word we do not say is not spoken;
    another word is replaced."""
    if "scary" in text:
        return None
    return text.replace("monster", "friend")


@pytest.fixture
def safety(monkeypatch):
    monkeypatch.setattr(chain, "WORDS", chain.WORDS + [mask_words])
    monkeypatch.setattr(chain, "SENTENCES", chain.SENTENCES + [soften])


async def test_a_test_stage_in_words_and_sentences_is_heard_over_the_wire(safety, fake_llm, start_server):
    fake_llm.reply("😊 A big monster lives here. It is very scary at night. Let's sing a song.")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.detect("my name is Zhang Wei, tell me a story")
        stt = await dev.wait_json("stt")
        assert stt["text"] == "my name is [name] Wei, tell me a story"
        await dev.wait_json("tts", state="stop", timeout=30)
        said = dev.texts()
    assert fake_llm.requests[0].messages[-1]["content"] == "my name is [name] Wei, tell me a story"
    assert "A big friend lives here." in said and "Let's sing a song." in said
    assert not any("scary" in s or "monster" in s for s in said), said
