"""Identity on the wire (issue 26): a second live session for one device
(a rebooted board whose old connection is still open, or two boards with
one Device-Id) no longer runs beside the first: the newest wins and the
older one is told (goodbye, then close 1000, both with the reason). With
device tokens, another device's id cannot be claimed at all."""
import asyncio

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.transport.device_sessions import REPLACED


async def test_a_second_session_of_one_device_replaces_the_first_which_is_told(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:11:01", mcp=False) as old, \
            WireDevice(server.ws.url, device_id="aa:bb:cc:00:11:02", mcp=False) as other:
        await old.hello()
        await other.hello()
        async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:11:01", mcp=False) as new:
            await new.hello()
            assert await old.wait_closed(timeout=30) == (1000, REPLACED)
            assert old.find("goodbye", reason=REPLACED)
            fake_llm.reply("🙂 Here I am.")
            await new.detect("hello")
            await new.wait_json("tts", state="stop", timeout=60)
            assert "Here I am." in new.texts() and new.closed is None
        assert other.closed is None         # another device's session is left alone
    assert server.ws.device_sessions.replaced == 1


async def test_the_hellos_say_which_session_is_older_not_the_end_of_their_set_up(fake_llm, start_server):
    """A reconnecting board's older session may still be setting up (its kept
    conversation read from a busy store) when the newer hello arrives: the
    older one is still the one replaced."""
    server = await start_server(server_config(fake_llm.base_url))
    ready, held, newer_ready, seen = server.services.on_session_ready, asyncio.Event(), asyncio.Event(), []

    async def older_held(session):
        seen.append(session)
        if len(seen) == 1:
            await held.wait()
        await ready(session)
        if len(seen) > 1:
            newer_ready.set()
    server.services.on_session_ready = older_held
    async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:11:03", mcp=False) as old:
        await old.hello()
        async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:11:03", mcp=False) as new:
            await new.hello()
            await asyncio.wait_for(newer_ready.wait(), 30)
            held.set()
            assert await old.wait_closed(timeout=30) == (1000, REPLACED)
            fake_llm.reply("🙂 Still here.")
            await new.detect("hello")
            await new.wait_json("tts", state="stop", timeout=60)
            assert "Still here." in new.texts() and new.closed is None
