"""What a transcript says about the end of the turn chooses how long the
silence after it must last before the reply is heard (pipeline/turn_words.py)."""
import pytest

from xiaozhi_server.config import VadConfig
from xiaozhi_server.pipeline.turn_words import OTHER, QUESTION, UNFINISHED, CommitSilence, judge


@pytest.mark.parametrize("text", [
    "Can you tell me a story about a cat?",
    "Who do you play with?",          # a question ending on a joining word is still a question
    "“Why is the sky blue?”",
    "你喜欢猫还是狗？",
    "你会唱歌吗",                      # Whisper often leaves Chinese without punctuation
    "小猫在哪里呢。",
])
def test_questions(text):
    assert judge(text) == QUESTION


@pytest.mark.parametrize("text", [
    "I went to the park and...",      # Whisper's own spelling of a trailing "and"
    "I went to the park and",
    "I like dogs because.",
    "Um",
    "My favourite animal is the",
    "I went to the park,",
    "我今天去了公园然后",
    "我喜欢小狗，因为",
    "我去了公园，",
    "嗯",
])
def test_words_that_go_on_are_unfinished(text):
    assert judge(text) == UNFINISHED


@pytest.mark.parametrize("text", [
    "", "   ", "hello",
    "Yesterday I went to the park.",  # often followed by "with my sister": a statement waits the default
    "I love her.", "I think so!", "好的。", "我想听故事",
])
def test_everything_else_waits_the_default(text):
    assert judge(text) == OTHER


def test_the_commit_silence_follows_the_words_and_never_undercuts_the_speculative_end():
    # The defaults a parent's file leaves as they are.
    commit = CommitSilence.from_config(VadConfig(), floor_ms=160)
    assert commit.for_text("Can you tell me a story?") == 500
    assert commit.for_text("I went to the park and") == 1200
    assert commit.for_text("I went to the park.") == 700
    assert commit.for_text(None) == 700
    # A configured commit shorter than the speculative end is raised to it.
    assert CommitSilence.from_config(VadConfig(commit_question_ms=100), floor_ms=300).for_text("Why?") == 300


def test_no_reply_is_prepared_for_words_that_go_on():
    assert CommitSilence.prepare_reply("Can you tell me a story?")
    assert CommitSilence.prepare_reply("I went to the park.")
    assert not CommitSilence.prepare_reply("I went to the park and...")
    assert not CommitSilence.prepare_reply("我去了公园，然后")
