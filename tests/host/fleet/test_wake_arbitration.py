"""Nearest device answers: of a household's devices that hear one wake word,
the loudest answers and the others go back to idle without a word; a stock
device (no level) is arbitrated first-come; a device in no household, or
alone in one, is never delayed.

Real servers on loopback, real WebSocket devices, the control store on
SQLite (one node) or on the run's PostgreSQL (two nodes sharing it). The
window runs on a clock the test moves (StepClock): a claim waits for it,
so the decision depends on the order of events, never on how fast this
machine is."""
import asyncio

import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.store.store import Store
from xiaozhi_server.fleet.wake import WakeArbiter, winner
from xiaozhi_server.server import XiaozhiServer
from xiaozhi_server.services import Services

pytestmark = pytest.mark.timeout(120)

WINDOW_S = 0.4
NEAR, FAR, ALONE = "aa:00:00:00:00:01", "aa:00:00:00:00:02", "aa:00:00:00:00:03"
# No models to load that these tests never use: ASR is never reached (no audio is sent).
CFG = dict(asr={"type": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "unused"},
           tts={"type": "espeak", "voice": "cmn-latn-pinyin"},
           session={"wake_quiet_ms": 100}, apps={"opener_lines": {"zh": [], "en": []},
                                                 "reinvite_lines": {"zh": [], "en": []}})


class StepClock:
    """Time that moves only when the test says so; sleep() waits for it."""

    def __init__(self):
        self.t = 1_000_000.0
        self.sleeping = 0
        self._tick = asyncio.Event()
        self._changed = asyncio.Event()

    def __call__(self):
        return self.t

    async def sleep(self, s):
        until = self.t + s
        self.sleeping += 1
        self._changed.set()
        try:
            while self.t < until:
                tick = self._tick
                await tick.wait()
        finally:
            self.sleeping -= 1

    def advance(self, s):
        self.t += s
        self._tick.set()
        self._tick = asyncio.Event()

    async def until_sleeping(self, n):
        while self.sleeping < n:
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), 30)


@pytest.fixture
async def nodes():
    """start(store_target) -> a server whose wake arbiter uses its own
    connection to that store and the test's clock; servers share providers."""
    started, stores, shared = [], [], {}
    clock = StepClock()

    async def start(target):
        cfg = server_config(**CFG)
        store = await Store(target).open()
        stores.append(store)
        services = Services(cfg, **shared, wake_floor=WakeArbiter(store.wake, WINDOW_S, clock=clock, sleep=clock.sleep))
        server = XiaozhiServer(cfg, services=services, with_broker=False, with_mcp=False)
        await server.start()
        started.append(server)
        s = server.services
        shared.update(llm=s.llm, asr=s.asr, tts=s.tts, vad=s.vad)
        return server

    start.clock = clock
    yield start
    for server in started:
        await server.stop()
    for store in stores:
        await store.close()


async def device(server, device_id):
    dev = await WireDevice(server.ws.url, device_id=device_id, mcp=False).connect()
    await dev.hello()
    return dev


async def wake(dev, level=None):
    """What a device sends on its wake word (stock firmware: no level)."""
    await dev.send_json(proto.listen(proto.LISTEN_DETECT, session_id=dev.session_id, text="你好小智", level=level))
    await dev.listen_start()


async def assert_answers(dev):
    await dev.wait_json("tts", state="sentence_start", timeout=30)


async def assert_went_idle_silently(dev):
    """The server said goodbye and closed the channel (stock firmware goes
    idle on the close; ours on goodbye too), and sent nothing to say."""
    assert await dev.wait_closed(30) is not None
    assert dev.find("goodbye", reason="another_device_answered"), [m for _t, m in dev.json]
    assert not dev.find("tts") and not dev.audio, "a device that lost the wake word spoke"


async def household(target, *devices):
    store = await Store(target).open()
    await store.wake.set_household("home", list(devices))
    await store.close()


async def both_wake_then_the_window_closes(clock, first, first_level, second, second_level):
    await wake(first, first_level)
    await clock.until_sleeping(1)      # the first claim waits out the window
    await wake(second, second_level)
    await clock.until_sleeping(2)      # the second joined its round
    clock.advance(WINDOW_S)


async def test_the_louder_of_two_devices_on_one_node_answers(nodes, tmp_path):
    db = str(tmp_path / "control.db")
    await household(db, NEAR, FAR)
    server = await nodes(db)
    near, far = await device(server, NEAR), await device(server, FAR)
    await both_wake_then_the_window_closes(nodes.clock, far, -41.0, near, -18.5)
    await assert_answers(near)
    await assert_went_idle_silently(far)
    assert near.closed is None
    await near.close()


async def test_the_louder_answers_across_two_nodes_sharing_the_store(nodes, postgres_cluster):
    url = postgres_cluster.new_schema_url()
    await household(url, NEAR, FAR)
    one, two = await nodes(url), await nodes(url)
    near, far = await device(one, NEAR), await device(two, FAR)
    await both_wake_then_the_window_closes(nodes.clock, far, -35.0, near, -20.0)
    await assert_answers(near)
    await assert_went_idle_silently(far)
    await near.close()


async def test_stock_devices_without_a_level_are_first_come_and_never_wait(nodes, tmp_path):
    db = str(tmp_path / "control.db")
    await household(db, NEAR, FAR)
    server = await nodes(db)
    first, second = await device(server, FAR), await device(server, NEAR)
    await wake(first)                 # stock: no level, first: answers at once
    await assert_answers(first)
    await wake(second, level=-10.0)   # louder, but a level cannot be compared with none
    await assert_went_idle_silently(second)
    assert nodes.clock.sleeping == 0
    await first.close()


async def test_a_device_in_no_household_or_alone_answers_at_once(nodes, tmp_path):
    db = str(tmp_path / "control.db")
    await household(db, ALONE)
    server = await nodes(db)
    for device_id in (ALONE, NEAR):   # alone in "home"; in no household
        dev = await device(server, device_id)
        await wake(dev, level=-30.0)
        await assert_answers(dev)
        await dev.close()
    assert nodes.clock.sleeping == 0


def test_the_round_rule():
    def c(device_id, level, seq, score=None):
        return {"device_id": device_id, "level": level, "score": score, "seq": seq, "claimed_at": 100.0}
    assert winner([c("a", -30, 1), c("b", -20, 2)]) == "b"
    assert winner([c("a", -20, 1, 0.5), c("b", -20, 2, 0.9)]) == "b"      # a tie of level: the score
    assert winner([c("a", -20, 1), c("b", -20, 2)]) == "a"                # then the first
    assert winner([c("a", -30, 1), c("b", None, 2)]) == "a"               # a stock claim: first-come
    assert winner([c("a", None, 1), c("b", -10, 2)]) == "a"


async def test_a_claim_after_the_window_opens_a_round_of_its_own(tmp_path):
    store = await Store(str(tmp_path / "control.db")).open()
    await store.wake.set_household("home", [NEAR, FAR])
    first = await store.wake.claim_wake("home", NEAR, -20.0, None, 100.0, WINDOW_S)
    joined = await store.wake.claim_wake("home", FAR, -30.0, None, 100.3, WINDOW_S)
    later = await store.wake.claim_wake("home", FAR, -30.0, None, 100.5, WINDOW_S)
    assert first["round_at"] == joined["round_at"] == 100.0
    assert [c["device_id"] for c in joined["claims"]] == [NEAR, FAR]
    assert later["round_at"] == 100.5 and [c["device_id"] for c in later["claims"]] == [FAR]
    await store.wake.set_household("home", [FAR])
    assert await store.wake.household_of(NEAR) is None and await store.wake.household_of(FAR) == ("home", 1)
    await store.close()


async def test_a_household_set_through_one_node_is_what_another_reads(fleet):
    one, two = await fleet(2)
    assert await one.call("PUT", "/api/households/home", {"devices": [FAR, NEAR, NEAR]}) == \
        (200, {"household_id": "home", "devices": [NEAR, FAR]})
    assert await two.get("/api/households/home") == (200, {"household_id": "home", "devices": [NEAR, FAR]})
    await two.call("PUT", "/api/households/grandma", {"devices": [FAR]})     # a device is in one household
    assert (await one.get("/api/households/home"))[1]["devices"] == [NEAR]
    for path, body, why in (("home", {"devices": NEAR}, "devices"), ("home", {"devices": ["a/b"]}, "device_id"),
                            ("home", {"members": []}, "members"), ("a+b", {"devices": []}, "household_id")):
        status, err = await one.call("PUT", "/api/households/" + path, body)
        assert status == 400 and why in err["error"]["message"], err
    assert (await one.get("/api/households/home"))[1]["devices"] == [NEAR]


def test_a_claim_out_of_family_is_not_decided_by_its_level():
    def c(device_id, level, seq, score=None):
        return {"device_id": device_id, "level": level, "score": score, "seq": seq, "claimed_at": 100.0}
    # Full scale (or clipping) is not "nearest": a believable level wins over it.
    assert winner([c("liar", 0.0, 1, 1.0), c("honest", -35.0, 2, 0.6)]) == "honest"
    assert winner([c("honest", -35.0, 1), c("liar", -1.0, 2)]) == "honest"
    # Two claims out of family: the score, then the first, never the level.
    assert winner([c("a", 0.0, 1, 0.4), c("b", -2.0, 2, 0.8)]) == "b"
    assert winner([c("a", -2.0, 1), c("b", 0.0, 2)]) == "a"


def test_levels_and_scores_are_finite_and_in_range():
    from xiaozhi_server.fleet.wake import clean
    bad = '{"type": "listen", "state": "detect", "text": "你好小智", "level": %s}'
    for value in ("NaN", "Infinity", "-Infinity", "20", "0.5", "-201"):
        with pytest.raises(proto.ProtoError):
            proto.decode_ws(bad % value, proto.UP)
    assert proto.decode_ws(bad % "-23.5", proto.UP)["level"] == -23.5
    with pytest.raises(proto.ProtoError):
        proto.decode_ws('{"type": "listen", "state": "detect", "text": "x", "score": NaN}', proto.UP)
    assert clean(float("nan"), float("inf")) == (None, None)
    assert clean(20, 7) == (0.0, 1.0) and clean(-500, -1) == (-200.0, 0.0) and clean(True, "x") == (None, None)


async def test_a_device_that_spams_wake_words_stops_winning(tmp_path):
    store = await Store(str(tmp_path / "control.db")).open()
    await store.wake.set_household("home", [NEAR, FAR])
    now = [1000.0]

    async def sleep(s):
        now[0] += s

    arbiter = WakeArbiter(store.wake, WINDOW_S, clock=lambda: now[0], sleep=sleep)
    spam = [await arbiter.claim(FAR, -20.0, 0.9) for _ in range(3)]
    assert spam == [True, True, True]              # alone in each round, within its budget
    now[0] += 1.0
    assert await arbiter.claim(FAR, -20.0, 0.9) is False      # over budget: not this one
    assert await arbiter.claim(NEAR, -40.0, 0.5) is True      # the sibling still answers
    now[0] += 11.0
    assert await arbiter.claim(FAR, -20.0, 0.9) is True       # one more after WAKE_EVERY_S
    await store.close()
