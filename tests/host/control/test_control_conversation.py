"""The parents' say over a device's kept conversation, through the API:
read whether it is kept and how many turns are, opt out (what is kept is
erased), erase it; bad bodies are refused naming the field."""


async def _kept(api, device_id, *questions):
    store = api.server.control.store
    turns = []
    for q in questions:
        turns += [{"role": "user", "content": q}, {"role": "assistant", "content": "yes"}]
    return await store.save_conversation(device_id, {"turns": turns, "app_id": "chat", "task_id": "conversation"})


async def test_parents_read_opt_out_and_erase_a_devices_conversation(api, device_id):
    path = "/api/devices/%s/conversation" % device_id
    assert await api.get(path) == (200, {"device_id": device_id, "keep": True, "turns": 0})
    assert await _kept(api, device_id, "my name is Lily", "I like cats")
    assert await api.get(path) == (200, {"device_id": device_id, "keep": True, "turns": 2})

    status, body = await api.delete(path)
    assert status == 200 and body["erased"] and body["turns"] == 0
    assert await api.server.control.store.load_conversation(device_id, 3600) is None

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
