"""The family's records on both back-ends (SQLite file, PostgreSQL): usage
adds up per local day, a board report counts a lesson once however many
nodes read it, old days are purged, a forgotten device leaves no row; and
the limits as the sessions ask them, with the clock moved."""
import asyncio
import datetime
import time
import zoneinfo

import pytest

from xiaozhi_server.errors import BadRequest
from xiaozhi_server.control.family import BEDTIME, TALK_TIME, Family
from xiaozhi_server.store.store import Store

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")


def at(hhmm, day=4):
    h, m = map(int, hhmm.split(":"))
    return datetime.datetime(2026, 12, day, h, m, tzinfo=SHANGHAI).timestamp()


@pytest.fixture
async def store(control_db):
    s = await Store(control_db()).open()
    yield s
    await s.close()


async def test_usage_counts_add_up_once_and_are_purged(store):
    await asyncio.gather(*[store.family.add_usage("d1", "2026-12-04", talk_seconds=1.5) for _ in range(10)])
    await store.family.add_usage("d1", "2026-12-04", translations=2)
    counted = await asyncio.gather(*[store.family.add_lesson("d1", "2026-12-04", "a.mp3", 3, "1733300000/a.mp3")
                                     for _ in range(3)])     # three nodes read one report
    assert counted.count(True) == 1
    assert await store.family.add_lesson("d1", "2026-12-04", "a.mp3", 2, "1733300900/a.mp3")
    await store.family.add_lesson("d1", "2026-09-01", "old.mp3", 1)
    got = await store.family.usage("d1", "2026-12-01", "2026-12-04")
    assert got == {"2026-12-04": {"talk_seconds": 15.0, "translations": 2,
                                  "lessons": [{"name": "a.mp3", "plays": 2, "passes": 5}]}}
    assert await store.family.talk_seconds("d1", "2026-12-04") == 15.0
    assert await store.family.purge_usage("2026-12-01") >= 1
    assert await store.family.usage("d1", "2026-01-01", "2026-12-31") == {"2026-12-04": got["2026-12-04"]}


async def test_forget_device_leaves_no_row_of_it(store):
    await store.devices.add_device("d2", None, "provisioned")
    await store.save_state("d2", {"device_id": "d2", "state": "idle"})
    await store.family.put_settings("d2", name="Mia's bear", daily_talk_minutes=20)
    await store.family.add_usage("d2", "2026-12-04", talk_seconds=5)
    await store.add_request("r-d2", "d2", "START_APP_TASK", {})
    await store.devices.add_device("d3", None, "provisioned")
    assert [d["name"] for d in await store.family.known_devices() if d["device_id"] == "d2"] == ["Mia's bear"]
    assert await store.family.forget_device("d2")
    assert not await store.family.device_known("d2") and await store.family.device_known("d3")
    assert await store.family.get_settings("d2") is None and await store.recent_requests("d2") == []
    assert await store.family.usage("d2", "2026-01-01", "2026-12-31") == {}
    assert not await store.family.forget_device("d2")


async def test_limits_with_the_clock_moved(store):
    now = [at("12:00")]
    family = Family(store.family, clock=lambda: now[0])
    await family.put_limits("d4", {"bedtime": {"start": "20:30", "end": "07:00"}, "daily_talk_minutes": 1})
    assert await family.refusal("d4") is None
    for hhmm, want in (("20:29", None), ("20:30", BEDTIME), ("23:59", BEDTIME), ("00:00", BEDTIME),
                       ("06:59", BEDTIME), ("07:00", None)):
        now[0] = at(hhmm)
        assert await family.refusal("d4") == want, hhmm
    now[0] = at("12:00")
    await family.count_talk("d4", 59)
    assert await family.refusal("d4") is None
    await family.count_talk("d4", 2)
    assert await family.refusal("d4") == TALK_TIME
    now[0] = at("12:00", day=5)           # a new local day: talk time again
    assert await family.refusal("d4") is None
    usage = await family.usage("d4", 2)
    assert [(d["date"], d["talk_seconds"]) for d in usage["days"]] == [("2026-12-04", 61), ("2026-12-05", 0)]
    # The same instant is another local day in another zone.
    await family.put_limits("d4", {"timezone": "America/Los_Angeles", "bedtime": None})
    assert (await family.usage("d4", 1))["days"][0]["date"] == "2026-12-04"


@pytest.mark.parametrize("body, field", [
    ({"bedtime": {"start": "25:00", "end": "07:00"}}, "bedtime.start"),
    ({"bedtime": {"start": "20:30", "end": "7:00"}}, "bedtime.end"),
    ({"bedtime": {"start": "20:30", "end": "20:30"}}, "bedtime"),
    ({"bedtime": "20:30-07:00"}, "bedtime"),
    ({"daily_talk_minutes": -5}, "daily_talk_minutes"),
    ({"daily_talk_minutes": 1.5}, "daily_talk_minutes"),
    ({"daily_talk_minutes": True}, "daily_talk_minutes"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"bedtimes": None}, "bedtimes"),
    ([1], "body"),
])
def test_bad_limits_name_the_field(body, field):
    from xiaozhi_server.control.family import check_limits
    with pytest.raises(BadRequest) as e:
        check_limits(body)
    assert e.value.message.startswith(field) or field in e.value.message


def test_clock_default_is_the_wall_clock():
    f = Family(records=None)
    assert abs(f.clock() - time.time()) < 5


async def test_counting_purges_days_past_the_retention(store):
    now = [at("09:00")]
    family = Family(store.family, retention_days=30, clock=lambda: now[0])
    await store.family.add_usage("d5", "2026-11-03", talk_seconds=7)      # 31 days before 2026-12-04
    await store.family.add_lesson("d5", "2026-11-04", "kept.mp3", 1)        # 30 days before: kept
    await family.count_translation("d5")
    got = await store.family.usage("d5", "2026-01-01", "2026-12-31")
    assert sorted(got) == ["2026-11-04", "2026-12-04"] and got["2026-12-04"]["translations"] == 1


async def test_a_translated_turn_counts_talk_time_and_one_translation(store):
    """modes.count_talk as a translation reply's end calls it (a session
    stand-in with the SessionPort members it reads)."""
    from xiaozhi_server.pipeline.reply import Reply, Turn
    from xiaozhi_server.runtime.modes import count_talk

    class Session:
        device_id = "d6"
        family = Family(store.family, clock=lambda: at("10:00"))
        spawned = []

        def spawn(self, coro):
            self.spawned.append(asyncio.ensure_future(coro))

    s = Session()
    reply = Reply(0, Turn("你好", 1500.0, time.monotonic(), 100.0))
    reply.first_audio_at = time.monotonic() - 2.0     # the reply has spoken for 2 s
    count_talk(s, reply, translation=True)
    await asyncio.gather(*s.spawned)
    day = (await store.family.usage("d6", "2026-12-04", "2026-12-04"))["2026-12-04"]
    assert day["translations"] == 1 and 3.5 <= day["talk_seconds"] < 5
