"""A child's history is bound to the device's own credentials (issue 37,
item 3): with the shared token, any client that sent another device's
Device-Id resumed that child's kept conversation (which then went to the
LLM), and its turns were added to the child's transcripts. Now a session
that proved only a shared token gets no kept conversation, no memory, and
writes none; the device's own token (from activation or provisioning)
keeps all of it; the operator may opt the shared token in."""
import pytest

from testkit.control_api import control_config, eventually
from testkit.fake_llm import FakeLLM
from testkit.wire_device import WireDevice
from testkit.node import start_node

SHARED = "household-shared-token"
CHILD = "aa:bb:cc:00:00:37"


async def _turn(server, token, words):
    async with WireDevice(server.ws.url, device_id=CHILD, token=token, mcp=False) as dev:
        await dev.hello()
        await dev.detect(words)
        await dev.wait_json("tts", state="stop", timeout=30)
        [session] = server.services.sessions
        carry = session.runtime.carry
        await eventually(lambda: carry._saving is None or carry._saving.done())


@pytest.mark.parametrize("opt_in", [False, True])
async def test_a_shared_token_does_not_open_a_childs_history(tmp_path, opt_in):
    with FakeLLM() as llm:
        llm.default_reply = "Nice to talk with you."
        cfg = control_config(tmp_path / "control.db",
                             auth={"tokens": [SHARED], "shared_token_history": opt_in})
        cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "test", "model": "fake-model"}
        cfg["session"]["language"] = "en"
        cfg["apps"] = {"opener_lines": {"zh": [], "en": []}, "max_reinvites": 0}
        server = await start_node(cfg, with_broker=True)
        try:
            creds = await server.control.devices.provision(CHILD)
            own = creds.get("token") or (creds.get("websocket") or {}).get("token")
            assert own
            care = server.control.store.care
            await care.set_privacy(CHILD, {"transcripts": True, "memory": True})
            await care.set_memory(CHILD, dict((await care.memory(CHILD))["profile"], name="Lily"))
            await _turn(server, own, "my name is Lily")          # the child, on its own token
            await _turn(server, SHARED, "what is my name")        # anyone with the shared token, as that child
            said = [m.get("content") for m in llm.requests[-1].messages]
            assert ("my name is Lily" in said) is opt_in, said
            kept = await server.control.store.conversations.conversation_setting(CHILD, 3600)
            assert kept["turns"] == (2 if opt_in else 1), kept
            # Nor the child's memory in the prompt, nor a line in the child's transcripts.
            prompt = llm.requests[-1].messages[0]["content"]
            assert ("Lily" in prompt) is opt_in, prompt
            await _turn(server, own, "and my cat?")               # the child again: its history is whole
            said = [m.get("content") for m in llm.requests[-1].messages]
            assert "my name is Lily" in said and ("what is my name" in said) is opt_in, said
            # The child's transcripts: written after the turn, in order (the shared one, if at all, before the last).
            expected = ["my name is Lily"] + (["what is my name"] if opt_in else []) + ["and my cat?"]
            await eventually(lambda: _last_is(care, "and my cat?"), timeout=30)
            assert [t["child"] for t in await care.turns(CHILD, 0, float("inf"))] == expected
        finally:
            await server.stop()


async def _last_is(care, words):
    turns = await care.turns(CHILD, 0, float("inf"))
    return turns and turns[-1]["child"] == words
