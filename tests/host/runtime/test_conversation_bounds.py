"""What of a conversation is kept between connections: whole turns of the
child (a tool call stays with its result), the newest first, within the
turns and bytes the config allows."""
import json

from xiaozhi_server.runtime.conversation import bounded


def _turn(i, with_tool=False):
    out = [{"role": "user", "content": "question %d" % i}]
    if with_tool:
        out += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c%d" % i, "type": "function", "function": {"name": "self.get_volume", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c%d" % i, "content": "50"}]
    return out + [{"role": "assistant", "content": "answer %d" % i}]


def test_the_newest_whole_turns_within_both_bounds():
    history = [{"role": "assistant", "content": "an opener"}]
    for i in range(6):
        history += _turn(i, with_tool=i == 4)
    kept = bounded(history, max_turns=3, max_bytes=100000)
    assert [m["content"] for m in kept if m["role"] == "user"] == ["question 3", "question 4", "question 5"]
    assert kept[0]["role"] == "user" and any(m["role"] == "tool" for m in kept)
    one_turn = len(json.dumps(_turn(5), ensure_ascii=False).encode())
    kept = bounded(history, max_turns=10, max_bytes=one_turn)
    assert kept == _turn(5)
    assert bounded(history, max_turns=10, max_bytes=one_turn - 1) == []
    assert bounded([{"role": "assistant", "content": "an opener"}], 10, 1000) == []
