"""The parents' say over a device's kept conversation, through the API:
read whether it is kept and how many turns are, opt out (what is kept is
erased), erase it; bad bodies are refused naming the field. And one
machine restarted between two questions goes on with the conversation."""
from testkit.control_api import control_config, eventually
from testkit.fake_llm import FakeLLM
from testkit.wire_device import WireDevice
from xiaozhi_server.store.store import Store
from xiaozhi_server.server import XiaozhiServer


async def _kept(api, device_id, *questions):
    store = api.server.control.store
    turns = []
    for q in questions:
        turns += [{"role": "user", "content": q}, {"role": "assistant", "content": "yes"}]
    return await store.conversations.save_conversation(device_id, {"turns": turns, "app_id": "chat",
                                                                   "task_id": "conversation"})


async def test_parents_read_opt_out_and_erase_a_devices_conversation(api, device_id):
    path = "/api/devices/%s/conversation" % device_id
    assert await api.get(path) == (200, {"device_id": device_id, "keep": True, "turns": 0})
    assert await _kept(api, device_id, "my name is Lily", "I like cats")
    assert await api.get(path) == (200, {"device_id": device_id, "keep": True, "turns": 2})

    status, body = await api.delete(path)
    assert status == 200 and body["erased"] and body["turns"] == 0
    assert await api.server.control.store.conversations.load_conversation(device_id, 3600) is None

    await _kept(api, device_id, "my name is Lily")
    status, body = await api.call("PUT", path, {"keep": False})
    assert (status, body) == (200, {"device_id": device_id, "keep": False, "turns": 0})
    assert not await _kept(api, device_id, "secret"), "an opted-out device's turns are not kept"
    assert await api.get(path) == (200, {"device_id": device_id, "keep": False, "turns": 0})
    status, body = await api.call("PUT", path, {"keep": True})
    assert status == 200 and body["keep"] is True


async def test_a_bad_setting_is_refused_naming_the_field(api, device_id):
    path = "/api/devices/%s/conversation" % device_id
    for bad in ({"keep": "no"}, {}, {"keep": False, "forever": True}):
        status, body = await api.call("PUT", path, bad)
        assert status == 400, bad
        assert body["error"]["message"].split(":")[0] in ("keep", "forever"), body
    status, body = await api.call("PUT", path, None)
    assert status == 400
    assert (await api.get(path))[1]["keep"] is True, "nothing changed"


async def test_a_restarted_server_goes_on_with_the_conversation_and_its_task(tmp_path, control_db):
    """One machine, the embedded store: the server restarts between two
    questions; the second reaches the LLM with the first, and the device is
    back in the task it was in (without its skills running again) when it
    says it still plays that lesson; once it says it plays nothing, the
    task is over and not kept any more."""
    target = control_db("control.db")
    with FakeLLM() as llm:
        llm.default_reply = "Nice to talk with you."
        cfg = control_config(tmp_path / "control.db", **({"db_url": target} if "://" in target else {}))
        cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "test", "model": "fake-model"}
        cfg["session"]["language"] = "en"

        async def connect(words=None, then_task=None, workers=1, player=None):
            """A server started on the store, the device's words answered, the
            task it is in (None with workers: the session is in a worker); the server stops again.
            player: what the device's self.mp3.get_status says (no MCP without it)."""
            cfg["server"]["workers"] = workers
            server = await XiaozhiServer(cfg, with_broker=True, with_mcp=False).start()
            tools = {"self.mp3.get_status": lambda a: player} if player else None
            try:
                async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:00:07", mcp=bool(player),
                                      tools=tools) as dev:
                    await dev.hello()
                    if words:
                        await dev.detect(words)
                        await dev.wait_json("tts", state="stop", timeout=20)
                    if workers > 1:     # the worker's own connection to the store keeps it
                        await eventually(lambda: turns_kept(len(llm.requests)), 10)
                        return None
                    await eventually(lambda: server.services.sessions)    # ready once its conversation is read
                    [session] = server.services.sessions
                    carry = session.runtime.carry
                    # The kept task is taken up, or not, once the device was asked.
                    await eventually(lambda: carry.restored.is_set() and carry.kept_task is None, 10)
                    active = session.runtime.active
                    if then_task:
                        # A lesson an alarm started (its skills ran on this connection).
                        session.runtime.resume(*then_task)
                    await eventually(lambda: carry._saving is None or carry._saving.done())
                    return active
            finally:
                await server.stop()

        async def turns_kept(n):
            store = await Store(target).open()
            try:
                return (await store.conversations.conversation_setting("aa:bb:cc:00:00:07", 3600))["turns"] == n
            finally:
                await store.close()

        await connect("my name is Lily", workers=2)
        await connect("what is my name", then_task=("english_learning", "repeater", {"name": "lesson1.mp3"},
                                                    "schedule"))
        playing = {"state": "playing", "name": "lesson1.mp3", "repeat_left": 1}
        assert await connect(player=playing) == "english_learning.repeater"
        assert await connect() == "chat.conversation", "a device that cannot say it plays the lesson"
        assert await connect(player=playing) == "chat.conversation", "the lesson was over: not kept any more"
    said = [m.get("content") for m in llm.requests[-1].messages]
    assert said[-3:] == ["my name is Lily", "Nice to talk with you.", "what is my name"], said
