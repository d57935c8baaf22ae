"""Each device's conversation in the control store, on both back-ends: kept
per device, replaced by the latest save, not kept for a device opted out,
older than the retention neither read nor kept, erased and forgotten."""
import pytest

from xiaozhi_server.store.store import Store

DAY = 24 * 3600.0


def _context(*pairs, app_id="chat", task_id="conversation"):
    turns = []
    for q, a in pairs:
        turns += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return {"turns": turns, "app_id": app_id, "task_id": task_id, "app_state": {"params": {}, "source": "voice"}}


@pytest.fixture
async def store(control_db):
    s = await Store(control_db()).open()
    yield s
    await s.close()


async def test_the_latest_save_of_each_device_is_read_back(store):
    assert await store.conversations.load_conversation("d1", DAY) is None
    assert await store.conversations.save_conversation("d1", _context(("hi", "hello")))
    assert await store.conversations.save_conversation("d1", _context(("hi", "hello"), ("你叫什么", "我叫小智"),
                                                                      app_id="english_learning", task_id="repeater"))
    await store.conversations.save_conversation("d2", _context(("other", "child")))
    got = await store.conversations.load_conversation("d1", DAY)
    assert [m["content"] for m in got["turns"]] == ["hi", "hello", "你叫什么", "我叫小智"]
    assert (got["app_id"], got["task_id"], got["app_state"]["source"]) == ("english_learning", "repeater", "voice")
    assert await store.conversations.conversation_setting("d1", DAY) == {"keep": True, "turns": 2}


async def test_an_opted_out_device_has_nothing_kept(store):
    await store.conversations.save_conversation("d1", _context(("my name is Lily", "hello Lily")))
    await store.conversations.set_conversation_keep("d1", False)
    assert await store.conversations.load_conversation("d1", DAY) is None
    assert not await store.conversations.save_conversation("d1", _context(("secret", "ok")))
    assert await store.conversations.load_conversation("d1", DAY) is None
    assert await store.conversations.conversation_setting("d1", DAY) == {"keep": False, "turns": 0}
    # Opted in again: kept from the next save on, nothing of before comes back.
    await store.conversations.set_conversation_keep("d1", True)
    assert await store.conversations.load_conversation("d1", DAY) is None
    assert await store.conversations.save_conversation("d1", _context(("again", "yes")))
    assert [m["content"] for m in (await store.conversations.load_conversation("d1", DAY))["turns"]] == ["again", "yes"]


async def test_nothing_is_kept_by_default_when_so_configured(store):
    store.conversations.keep_by_default = False
    assert not await store.conversations.save_conversation("d1", _context(("hi", "hello")))
    assert await store.conversations.conversation_setting("d1", DAY) == {"keep": False, "turns": 0}
    await store.conversations.set_conversation_keep("d1", True)
    assert await store.conversations.save_conversation("d1", _context(("hi", "hello")))
    assert (await store.conversations.conversation_setting("d1", DAY))["turns"] == 1


async def test_old_conversations_are_not_read_and_are_purged(store):
    await store.conversations.save_conversation("old", _context(("yesterday", "yes")))
    await store.conversations.save_conversation("new", _context(("now", "yes")))
    await store._run(lambda: store._db.execute("UPDATE conversations SET updated_at = updated_at - ? "
                                               "WHERE device_id = 'old'", (2 * DAY,)))
    assert await store.conversations.load_conversation("old", DAY) is None
    assert await store.conversations.conversation_setting("old", DAY) == {"keep": True, "turns": 0}
    assert await store.conversations.purge_conversations(DAY) == 1
    rows = await store._run(lambda: store._db.execute(
        "SELECT device_id FROM conversations WHERE turns IS NOT NULL").fetchall())
    assert [r[0] for r in rows] == ["new"]


async def test_erase_keeps_the_setting_and_forget_removes_the_device(store):
    await store.conversations.save_conversation("d1", _context(("hi", "hello")))
    assert await store.conversations.erase_conversation("d1")
    assert not await store.conversations.erase_conversation("d1")
    assert await store.conversations.load_conversation("d1", DAY) is None
    await store.conversations.set_conversation_keep("d1", False)
    await store.conversations.forget_conversation("d1")
    rows = await store._run(lambda: store._db.execute("SELECT COUNT(*) FROM conversations").fetchone()[0])
    assert rows == 0
    assert await store.conversations.conversation_setting("d1", DAY) == {"keep": True, "turns": 0}


async def test_a_lesson_that_ended_leaves_the_turns_but_not_the_task(store):
    # The board's player_done report names the lesson that played out: a
    # kept conversation of that lesson keeps its turns and loses the task;
    # one of another lesson (started after) keeps its task.
    ctx = _context(("hi", "hello"), app_id="english_learning", task_id="repeater")
    ctx["app_state"] = {"params": {"name": "lesson1.mp3"}, "source": "mqtt_immediate"}
    await store.conversations.save_conversation("d1", ctx)
    assert not await store.conversations.end_kept_task("d1", "lesson2.mp3")
    assert (await store.conversations.load_conversation("d1", DAY))["app_id"] == "english_learning"
    assert await store.conversations.end_kept_task("d1", "lesson1.mp3")
    got = await store.conversations.load_conversation("d1", DAY)
    assert (got["app_id"], got["task_id"], got["app_state"]) == (None, None, {})
    assert [m["content"] for m in got["turns"]] == ["hi", "hello"]
    # every node reads the report: once is enough
    assert not await store.conversations.end_kept_task("d1", "lesson1.mp3")
    assert not await store.conversations.end_kept_task("nobody", "lesson1.mp3")
