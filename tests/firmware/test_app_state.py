# The device state machine: legal moves applied and announced, illegal ones refused.
import t
import proto
from app.voice.state import DeviceState


def test_app_state_follows_the_schema_transitions():
    st = DeviceState()
    seen = []
    st.listen(lambda old, new: seen.append((old, new)))
    for s in ("starting", "idle", "connecting", "listening", "speaking", "listening", "idle"):
        t.true(st.go(s), "go %s" % s)
    t.eq(st.state, "idle")
    t.eq(seen[0], ("unknown", "starting"))
    t.eq(len(seen), 7)


def test_app_state_refuses_illegal_transitions_without_applying_them():
    st = DeviceState()
    seen = []
    st.listen(lambda old, new: seen.append(new))
    st.go("starting")
    st.go("idle")
    t.eq(st.go("fatal_error"), False, "idle -> fatal_error")
    st.go("connecting")
    t.eq(st.go("speaking"), False, "connecting -> speaking")
    t.eq(st.go("no_such_state"), False, "unknown name")
    t.eq(st.state, "connecting")
    t.eq(st.refused, 3)
    t.eq(seen, ["starting", "idle", "connecting"])


def test_app_state_every_legal_pair_is_accepted_and_nothing_else():
    for a in proto.DEVICE_STATES:
        for b in proto.DEVICE_STATES:
            st = DeviceState(a)
            ok = st.go(b)
            t.eq(ok, a == b or b in proto.DEVICE_TRANSITIONS[a], "%s -> %s" % (a, b))


def test_app_state_go_idle_recovers_from_every_connected_state():
    for s in ("connecting", "listening", "speaking"):
        st = DeviceState(s)
        t.true(st.go_idle(), "idle from " + s)
        t.eq(st.state, "idle")


def test_app_state_a_failing_listener_does_not_block_the_change():
    st = DeviceState("idle")

    def bad(old, new):
        raise RuntimeError("boom")
    st.listen(bad)
    t.true(st.go("listening"))
    t.eq(st.state, "listening")
