"""How the offline model's provider asks its llama.cpp host, checked over
real HTTP against the scripted OpenAI-compatible model (it speaks the
host's Chat Completions format; no model is loaded here, the opt-in smoke
tests load one):

- a conversation's later turn begins with exactly what the host read for
  the earlier one, so the host's prompt cache holds it and a turn reads
  only its own few lines (on 2 cores every 20 tokens read is ~0.4 s);
- the tool decision is one token when it is `none`, and the answer's
  prompt is then the decision's own head;
- a call the small model writes as its answer (it does so for "my name is
  Lily") reaches the dialogue as a call; JSON that is no call is asked
  again for words;
- examples in the decision's instruction name only tools and apps the
  child has.
"""
import datetime
import json

import pytest
from llguidance import LLMatcher

from testkit.fake_llm import FakeLLM
from xiaozhi_server.providers.llm import decision, local
from xiaozhi_server.providers.registry import create

SYSTEM = {"role": "system", "content": "You are Xiaozhi."}


def tool(name, props=None, description="does it"):
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props or {}}}}


TOOLS = [tool("self.audio_speaker.set_volume", {"volume": {"type": "integer"}}),
         tool("switch_app", {"app_id": {"type": "string", "enum": ["chat", "english_learning"]}}),
         tool("remember", {"name": {"type": "string"}, "age": {"type": "integer"}})]


@pytest.fixture
def host():
    fake = FakeLLM().start()
    yield fake
    fake.stop()


def provider(fake):
    return create("llm", {"type": "local", "url": fake.base_url.removesuffix("/v1"), "slots": 2})


async def events(llm, messages, tools=TOOLS, **kw):
    return [ev async for ev in llm.stream_chat(messages, tools, **kw)]


def said(evs):
    return "".join(ev.text for ev in evs if ev.kind == "text")


class StillClock(datetime.datetime):
    """One minute that does not pass: the time line is told again when the minute changes."""

    @classmethod
    def now(cls, tz=None):
        return datetime.datetime(2026, 12, 6, 16, 28, 5)


async def test_a_later_turn_begins_with_what_the_host_read_for_the_earlier_one(host, monkeypatch):
    monkeypatch.setattr(local.datetime, "datetime", StillClock)
    host.reply("none").reply("A spider has eight legs.").reply("none").reply("Cows eat grass.")
    llm = provider(host)
    first = [SYSTEM, {"role": "user", "content": "How many legs does a spider have?"}]
    assert said(await events(llm, first)) == "A spider has eight legs."
    answer_one = host.requests[1].messages
    second = first + [{"role": "assistant", "content": "A spider has eight legs."},
                      {"role": "user", "content": "What do cows eat?"}]
    assert said(await events(llm, second)) == "Cows eat grass."
    decision_two = host.requests[2].messages
    # What the host read and wrote for turn one is the head of turn two's prompt.
    assert decision_two[:len(answer_one) + 1] == answer_one + [second[2]]
    # Turn one was asked with the time, turn two (the same minute) reads no time again.
    lines = [m["content"] for m in decision_two if m["role"] == "system"]
    assert sum(line.startswith("Time, if asked") for line in lines) == 1


async def test_a_conversation_ending_in_the_servers_own_lines_is_read_ahead_up_to_them(host):
    # The opener and a re-invite close the kept conversation: llama.cpp refuses a request
    # ending in two assistant messages (HTTP 400), so the head read ahead stops before them.
    llm = provider(host)
    kept = [SYSTEM, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! What shall we do?"},
            {"role": "assistant", "content": "Still there?"}]
    await llm.prepare(kept, TOOLS, conversation="kid")
    head = host.requests[-1].messages
    assert head[-1]["role"] != "assistant" and {"role": "user", "content": "Hi"} in head
    host.reply("none").reply("Hello again!")
    assert said(await events(llm, kept + [{"role": "user", "content": "Hello"}], conversation="kid")) == "Hello again!"
    assert host.requests[-2].messages[:len(head)] == head


async def test_a_none_decision_is_one_token_and_the_answer_is_its_head(host):
    host.reply("none").reply("恐龙吃植物。")
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "恐龙吃什么？"}])
    assert said(evs) == "恐龙吃植物。"
    ask, answer = host.requests
    assert ask.body["max_tokens"] == 1 and ask.body["grammar"].startswith("%llguidance")
    assert ask.messages[-1] == {"role": "assistant", "content": decision.OPENING}
    # The answer's prompt is the decision's with the language line in place of the begun reply.
    assert answer.messages[:-1] == ask.messages[:-1]
    assert answer.messages[-2] == {"role": "user", "content": "恐龙吃什么？"}
    assert answer.messages[-1]["content"].startswith("Answer in Chinese")


async def test_a_chosen_tool_is_written_whole_then_called(host):
    host.reply("self").reply('self.audio_speaker.set_volume","args":{"volume":80}}')
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "Turn the volume up."}])
    calls = [ev for ev in evs if ev.kind == "tool_call"]
    assert [(c.name, c.arguments) for c in calls] == [("self.audio_speaker.set_volume", {"volume": 80})]
    assert host.requests[1].body["max_tokens"] > 1
    assert host.requests[1].messages == host.requests[0].messages    # read from the cache at once


async def test_a_call_written_as_the_answer_is_a_call(host):
    host.reply("none").reply('{"tool":"remember","args":{"name":"Lily"}}')
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "My name is Lily."}])
    assert said(evs) == ""
    assert [(ev.name, ev.arguments) for ev in evs if ev.kind == "tool_call"] == [("remember", {"name": "Lily"})]


async def test_json_that_is_no_call_is_asked_again_for_words(host):
    host.reply("none").reply('{"tool":"none"}').reply("No, there are no rabbits on the moon.")
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "Are there rabbits on the moon?"}])
    assert said(evs) == "No, there are no rabbits on the moon."
    assert not [ev for ev in evs if ev.kind == "tool_call"]
    assert "not JSON" in host.requests[2].messages[-1]["content"]


async def test_a_call_written_again_after_a_tools_result_is_not_taken_and_words_are_asked_for(host):
    # Seen on make run: after remember, the answer was JSON the child never heard.
    host.reply('{"tool":"remember","args":{"name":"Lily","age":6}}', chunk_delay=0.01)
    host.reply("Nice to meet you, Lily!")
    llm = provider(host)
    evs = await events(llm, [
        SYSTEM, {"role": "user", "content": "My name is Lily and I am six."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "remember", "arguments": '{"name": "Lily", "age": 6}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": 'remembered: {"name": "Lily", "age": 6}'}])
    assert said(evs) == "Nice to meet you, Lily!"
    assert not [ev for ev in evs if ev.kind == "tool_call"]
    assert "not JSON" in host.requests[-1].messages[-1]["content"]


async def test_words_starting_with_a_brace_that_are_no_call_are_not_lost(host):
    host.reply("none").reply("{curly} brackets hold things.")
    llm = provider(host)
    # Not a call and not JSON: asked again for words, which the child hears.
    host.reply("Curly brackets hold things.")
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "What are curly brackets?"}])
    assert said(evs) == "Curly brackets hold things."


async def test_a_child_who_must_wait_for_a_slot_hears_a_short_line_first(host):
    host.slots = [True, True]       # both slots decode other children's turns
    host.reply("none").reply("恐龙吃植物。")
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "恐龙吃什么？"}])
    assert said(evs) == local.BUSY_LINE["zh"] + " 恐龙吃植物。"
    host.slots = [True, False]
    host.reply("none").reply("Cows eat grass.")
    assert said(await events(llm, [SYSTEM, {"role": "user", "content": "What do cows eat?"}])) == "Cows eat grass."


async def test_each_conversation_keeps_its_own_slot(host):
    """Two children talking at once each find their own conversation in the
    host: a conversation's turns (decision and answer) go to one slot, the
    next conversation to the other."""
    host.default_reply = "none"
    llm = provider(host)
    for conversation in ("lily", "tom", "lily", "tom"):
        before = len(host.requests)
        await events(llm, [SYSTEM, {"role": "user", "content": "Hi, I am %s." % conversation}],
                     conversation=conversation)
        slots = {r.body.get("id_slot") for r in host.requests[before:]}
        assert slots == {0 if conversation == "lily" else 1}, (conversation, slots)


async def test_a_child_whose_slot_is_busy_hears_the_short_line(host):
    host.default_reply = "none"
    llm = provider(host)
    await events(llm, [SYSTEM, {"role": "user", "content": "Hello."}], conversation="lily")   # slot 0
    host.slots = [True, False]
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "Hello again."}], conversation="lily")
    assert said(evs).startswith(local.BUSY_LINE["en"])
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "Hello."}], conversation="tom")    # slot 1
    assert not said(evs).startswith(local.BUSY_LINE["en"])


async def test_a_question_said_back_is_dropped_and_the_answer_goes_on(host):
    host.reply("none").reply("恐龙吃什么？恐龙吃植物。")
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "恐龙吃什么？"}])
    assert said(evs) == "恐龙吃植物。"
    host.reply("none").reply("天空为什么是蓝色的？因为阳光里的蓝光散得最多。")
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "天为什么是蓝色的？"}])
    assert said(evs) == "因为阳光里的蓝光散得最多。"


async def test_only_the_question_said_back_is_asked_again(host):
    host.reply("none").reply("恐龙吃什么").reply("恐龙吃植物。")
    llm = provider(host)
    evs = await events(llm, [SYSTEM, {"role": "user", "content": "恐龙吃什么？"}])
    assert said(evs) == "恐龙吃植物。"
    assert "not the question again" in host.requests[2].messages[-1]["content"]


async def test_a_short_answer_is_not_lost_while_held(host):
    host.reply("none").reply("没有")
    llm = provider(host)
    assert said(await events(llm, [SYSTEM, {"role": "user", "content": "月亮上有兔子吗？"}])) == "没有"
    assert len(host.requests) == 2


def test_the_time_is_told_again_only_when_it_changed(monkeypatch):
    clock = [datetime.datetime(2026, 12, 6, 16, 28, 5)]

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return clock[0]
    monkeypatch.setattr(local.datetime, "datetime", Clock)
    lines = local.TurnLines()
    told, said_in = lines.now("hi", "en", None)
    assert told == "Time, if asked: 4:28 PM, Sunday 6 December." and said_in == "Answer in English."
    clock[0] += datetime.timedelta(seconds=30)
    assert lines.now("what now", "zh", told) == (None, "Answer in Chinese (简体中文).")
    clock[0] += datetime.timedelta(seconds=30)
    assert lines.now("and now", "en", told)[0] == "Time, if asked: 4:29 PM, Sunday 6 December."
    # A past turn is written with the lines it was asked with.
    assert lines.then("what now") == (None, "Answer in Chinese (简体中文).")
    assert lines.then("never asked here") == (None, "Answer in English.")


def test_examples_name_only_the_tools_and_apps_the_child_has():
    text = decision.instruction(TOOLS)
    assert '{"tool":"switch_app","args":{"app_id":"chat"}}' in text
    assert "english_translation" not in text          # not among switch_app's app ids here
    assert "self.mp3.stop" not in text                # not offered
    assert '{"tool":"remember","args":{"name":"Tom"}}' in text
    assert '{"tool":"none"}' in text


def test_the_grammar_offers_each_tool_under_its_own_schema_and_none():
    g = decision.grammar(TOOLS)
    assert g.startswith("%llguidance {}\nstart: ")
    for t in TOOLS:
        name = t["function"]["name"]
        assert json.dumps(name + '","args":') in g
    assert '"none\\"}"' in g
    assert json.dumps(dict(TOOLS[1]["function"]["parameters"], **{"x-guidance": {"whitespace_flexible": False}})) in g


def test_a_device_tool_schema_llguidance_cannot_write_is_eased_not_dropped():
    # Another firmware's tool: an argument named "format", a format of its own, a oneOf.
    odd = {"type": "function", "function": {"name": "self_photo_save", "description": "Save a photo.", "parameters": {
        "type": "object", "required": ["format"],
        "properties": {"format": {"type": "string", "enum": ["jpg", "png"]},
                       "album": {"type": "string", "format": "album-name"},
                       "size": {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date"}]}}}}}
    g = decision.grammar(TOOLS + [odd])
    refused, why = LLMatcher.validate_grammar_with_warnings(g)
    assert not refused, why
    assert '"format": {"type": "string", "enum": ["jpg", "png"]}' in g and '"format": "date"' in g
    assert "album-name" not in g


def test_only_a_whole_call_to_an_offered_tool_is_a_call():
    assert decision.parse_call('{"tool":"remember","args":{"name":"Lily"}}', TOOLS) == ("remember", {"name": "Lily"})
    assert decision.parse_call('{"tool":"none"}', TOOLS) is None
    assert decision.parse_call('{"tool":"self.power_off","args":{}}', TOOLS) is None
    assert decision.parse_call('{"tool":"remember"', TOOLS) is None
    assert decision.parse_call(decision.OPENING + 'none"}', TOOLS) is None
    assert decision.parse_call(decision.OPENING + 'switch_app","args":{"app_id":"chat"}}', TOOLS) == \
        ("switch_app", {"app_id": "chat"})
