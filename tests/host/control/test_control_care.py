"""What the family keeps per device (store/care.py) on both back-ends, and
its routes: blocked topics, flags, privacy, transcripts, memory; bad input
gets a 400 that names the field, and nothing is changed by it."""
import time

import pytest

from xiaozhi_server.store.store import Store


@pytest.fixture
async def care(control_db):
    s = await Store(control_db()).open()
    yield s.care
    await s.close()


async def test_family_records_on_both_back_ends(care, monkeypatch):
    assert await care.topics("d1") == {"blocked_topics": [], "redirect_line": None, "synonyms": {}}
    await care.set_topics("d1", ["ghosts", "鬼"], "Let's talk about stars!")
    assert (await care.topics("d1"))["blocked_topics"] == ["ghosts", "鬼"]

    fid = await care.add_flag("d1", "ghosts", "tell me about ghosts", None, "Let's talk about stars!")
    flags = await care.flags("d1")
    assert [f["id"] for f in flags] == [fid] and flags[0]["child_said"] == "tell me about ghosts"
    assert await care.review_flag("d1", fid) and not await care.review_flag("d1", fid)
    assert await care.flags("d1") == []

    # transcripts: off by default, so nothing is kept
    assert await care.privacy("d1") == {"transcripts": False, "retention_days": 7, "memory": True}
    assert not await care.add_turn("d1", "chat", "hello", "hi there")
    await care.set_privacy("d1", {"transcripts": True, "retention_days": 2})
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now - 3 * 86400)      # a turn three days ago
    assert await care.add_turn("d1", "chat", "old words", "old reply")
    monkeypatch.setattr(time, "time", lambda: now)
    assert await care.add_turn("d1", "english_translation", "苹果", "apple")
    turns = await care.turns("d1", now - 10 * 86400, now + 10)
    assert [(t["app"], t["child"], t["reply"]) for t in turns] == [("english_translation", "苹果", "apple")]
    assert await care.delete_turns("d1") == 1

    # memory: kept while on; turning it off erases it and keeps nothing new
    profile = {"name": "Mia", "age": 6, "interests": ["dinosaurs"], "learnt": [], "notes": ""}
    assert await care.set_memory("d1", profile)
    assert (await care.memory("d1"))["profile"]["interests"] == ["dinosaurs"]
    await care.set_privacy("d1", {"memory": False})
    assert not await care.set_memory("d1", profile)
    await care.set_privacy("d1", {"memory": True})
    assert (await care.memory("d1"))["profile"]["name"] == ""

    await care.set_memory("d1", profile)
    await care.forget_device("d1")
    assert await care.topics("d1") == {"blocked_topics": [], "redirect_line": None, "synonyms": {}}
    assert (await care.memory("d1"))["profile"]["name"] == ""
    assert await care.privacy("d1") == {"transcripts": False, "retention_days": 7, "memory": True}


async def test_turns_past_their_retention_are_purged_when_the_store_opens(control_db, monkeypatch):
    store = await Store(control_db()).open()
    await store.care.set_privacy("d2", {"transcripts": True, "retention_days": 1})
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now - 2 * 86400)
    assert await store.care.add_turn("d2", "chat", "two days ago", "yes")
    monkeypatch.setattr(time, "time", lambda: now)
    count = "SELECT COUNT(*) FROM family_transcripts"
    assert await store._run(lambda: store._db.execute(count).fetchone()[0]) == 1
    await store.close()
    store = await Store(control_db()).open()       # the server starts again
    assert await store._run(lambda: store._db.execute(count).fetchone()[0]) == 0
    await store.close()


async def test_family_routes_and_their_errors(api):
    base = "/api/devices/bear1"
    status, body = await api.get(base + "/topics")
    assert status == 200 and body["blocked_topics"] == [] and body["redirect_line"] and body["redirect_default"]

    bad = [
        ("/topics", {"blocked_topics": "ghosts"}, "blocked_topics"),
        ("/topics", {"blocked_topics": ["ok", ""]}, "blocked_topics[1]"),
        ("/topics", {"blocked_topics": [], "colour": "red"}, "colour"),
        ("/topics", {"blocked_topics": [], "redirect_line": 5}, "redirect_line"),
        ("/privacy", {"transcripts": "yes"}, "transcripts"),
        ("/privacy", {"retention_days": 0}, "retention_days"),
        ("/privacy", {}, "body"),
        ("/memory", {"profile": {"age": "six"}}, "profile.age"),
        ("/memory", {"profile": {"pets": []}}, "profile.pets"),
    ]
    for path, body, named in bad:
        status, out = await api.call("PUT", base + path, body)
        assert status == 400 and named in out["error"]["message"], (path, body, out)
    async with api.http.put(api.base + base + "/topics", data=b"{not json") as r:
        assert r.status == 400 and "JSON" in (await r.json())["error"]["message"]
    status, out = await api.get(base + "/transcripts", date="2026-13-01")
    assert status == 400 and "date" in out["error"]["message"]
    status, out = await api.get(base + "/transcripts", date="2026-12-01", tz="Mars/Olympus")
    assert status == 400 and "tz" in out["error"]["message"]
    status, out = await api.delete(base + "/flags/f123")
    assert status == 404
    status, out = await api.get("/api/devices/a+b/topics")
    assert status == 400 and "device_id" in out["error"]["message"]
    # nothing above changed anything
    assert (await api.get(base + "/privacy"))[1] == {"transcripts": False, "retention_days": 7, "memory": True}

    status, body = await api.call("PUT", base + "/topics", {"blocked_topics": [" Ghosts ", "ghosts", "打架"],
                                                            "redirect_line": "Let's talk about the stars!"})
    assert status == 200 and body["blocked_topics"] == ["Ghosts", "打架"] and not body["redirect_default"]
    assert (await api.call("PUT", base + "/privacy", {"transcripts": True}))[1]["transcripts"] is True
    status, body = await api.call("PUT", base + "/memory", {"enabled": False, "profile": {"name": "Mia"}})
    assert status == 409
    status, body = await api.call("PUT", base + "/memory", {"enabled": True, "profile": {"name": "Mia", "age": 6}})
    assert status == 200 and body == {"enabled": True, "profile": {"name": "Mia", "age": 6, "interests": [],
                                                                     "learnt": [], "notes": ""}}
    status, body = await api.delete(base + "/memory")
    assert status == 200 and body["profile"]["name"] == ""
    status, body = await api.get(base + "/transcripts", date="2026-12-04", tz="Asia/Shanghai")
    assert status == 200 and body["turns"] == [] and body["transcripts"] is True
    assert (await api.delete(base + "/transcripts")) == (200, {"deleted": 0})
