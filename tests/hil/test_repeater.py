"""The English repeater on the board: asked by voice, the server's LLM calls
start_repeater, the board plays the SD-card lesson N times; a button press
stops it and cancels the passes left."""
from testkit.fake_llm import Turn


def ask_for_lesson(console, target, repeat):
    target.need_sim("asking for a lesson by voice")
    # Every request ending with the child's words, whatever the ASR heard: a reply
    # prepared at a pause and dropped when the child went on would take a queued
    # answer (pipeline/listener.py, the speculative end).
    target.llm.answer("", Turn(tool_calls=[("start_repeater", {"name": "lesson1.mp3", "repeat": repeat})]))
    console.opener_heard()
    console.send("say Please play lesson one %d times." % repeat)
    # the words as heard are the ASR's business (the LLM here is scripted): that it heard something is ours
    assert console.event("subtitle", role="user", timeout=40)["text"].strip()


def test_repeater_two_passes(console, target):
    ask_for_lesson(console, target, 2)
    first = console.event("player", state="playing", timeout=30)
    assert first["name"] == "lesson1.mp3"
    end1 = console.event("player", state="pass_end", timeout=20)
    end2 = console.event("player", state="pass_end", timeout=20)
    assert (end1["pass"], end1["repeat_left"]) == (1, 1)
    assert (end2["pass"], end2["repeat_left"]) == (2, 0)
    console.event("player", state="done", timeout=10)
    console.send("status")
    st = console.event("status", timeout=10)
    assert st["player"] == "idle" and st["repeat_left"] == 0


def test_button_stops_the_lesson_and_cancels_the_passes_left(console, target):
    ask_for_lesson(console, target, 3)
    console.event("player", state="playing", timeout=30)
    console.send("button")
    stopped = console.event("player", state="stopped", timeout=10)
    assert stopped["name"] == "lesson1.mp3"
    console.quiet_for(4, "player", state="pass_end")   # the 1.5 s lesson would have ended twice by now
    console.send("status")
    st = console.event("status", timeout=10)
    assert st["player"] == "idle" and st["repeat_left"] == 0
