"""A device's session lets the offline model read the conversation's fixed
head (the agent prompt and the device's tools) as soon as the tools are
listed, so the child's first question finds it in the host's cache (the
local model reads ~6 s of it on 2 cores). The local provider talks here to
the scripted model over the Chat Completions wire the llama.cpp host
speaks (its `url` option); no model is loaded."""
from llguidance import LLMatcher

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto


def reads_ahead(rec):
    return rec.body.get("max_tokens") == 1 and "grammar" not in rec.body


async def test_the_prompt_head_is_read_before_the_first_question(fake_llm, start_server):
    fake_llm.default_reply = "none"
    cfg = server_config(fake_llm.base_url)
    cfg["llm"] = {"type": "local", "url": fake_llm.base_url.removesuffix("/v1")}
    server = await start_server(cfg)
    tools = {"self.get_device_status": lambda a: {}, "self.audio_speaker.set_volume": lambda a: True}
    async with WireDevice(server.ws.url, tools=tools) as dev:
        await dev.hello()
        await dev.wait_for(lambda: any(reads_ahead(r) for r in fake_llm.requests), timeout=30)
        head = next(r for r in fake_llm.requests if reads_ahead(r)).messages
        assert head[0]["role"] == "system" and "Xiaozhi" in head[0]["content"]
        tool_block = " ".join(m["content"] for m in head if m["role"] == "system")
        assert "self_audio_speaker_set_volume(" in tool_block and "switch_app(" in tool_block
        # With an example of what a child says for it, under the name the model sees.
        assert '{"tool":"self_audio_speaker_set_volume","args":{"volume":80}}' in tool_block
        assert not any(m["role"] == "user" for m in head)

        # The first question's prompt starts with that head: the host has it.
        await dev.detect("How many legs does a spider have?")
        await dev.wait_for(lambda: any(r.body.get("grammar") for r in fake_llm.requests), timeout=30)
        asked = next(r for r in fake_llm.requests if r.body.get("grammar")).messages
        assert asked[:len(head)] == head


async def test_the_tool_decision_grammar_a_session_sends_compiles(fake_llm, start_server):
    """The grammar of a session with the Sening board's tools (the SD player's
    `sd_name` arguments among them) is one the host's llguidance compiles: a
    schema it refuses fails the whole grammar, and the host then lets the
    model write anything, logging one line."""
    fake_llm.default_reply = "none"
    cfg = server_config(fake_llm.base_url)
    cfg["llm"] = {"type": "local", "url": fake_llm.base_url.removesuffix("/v1")}
    server = await start_server(cfg)
    tools = {name: (lambda a: {}) for name in proto.DEVICE_TOOL_NAMES}
    async with WireDevice(server.ws.url, tools=tools) as dev:
        await dev.hello()
        await dev.wait_for(lambda: any(reads_ahead(r) for r in fake_llm.requests), timeout=30)
        await dev.detect("Please play lesson one two times.")
        await dev.wait_for(lambda: any(r.body.get("grammar") for r in fake_llm.requests), timeout=30)
    grammar = next(r for r in fake_llm.requests if r.body.get("grammar")).body["grammar"]
    assert '"self_mp3_play\\",\\"args\\":"' in grammar and '"start_repeater\\",\\"args\\":"' in grammar
    refused, why = LLMatcher.validate_grammar_with_warnings(grammar)
    assert not refused and not why, why
