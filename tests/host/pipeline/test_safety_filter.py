"""What the safety filter matches and what it leaves alone: a parent's
topics as whole words (any case, plural, spacing) or Chinese anywhere;
the lexicon's words, but not everyday phrases its short Chinese entries
sit inside; only while the chat app runs. A reply is cut at the sentence
that hits, and flagged only if the child's words were final."""
import asyncio

from xiaozhi_server.pipeline.chain import Chain
from xiaozhi_server.pipeline.safety import Instead, SafetyFilter
from xiaozhi_server.text.lines import Lines


class Topics:
    """The family store as the filter reads it (one device's topics)."""

    def __init__(self, topics, line=None):
        self.value = {"blocked_topics": topics, "redirect_line": line}
        self.flags = []

    async def topics(self, device_id):
        return self.value

    async def add_flag(self, device_id, topic, child_said, reply_blocked, line):
        self.flags.append((topic, child_said, reply_blocked, line))


async def test_topics_and_lexicon_matches():
    chat = [True]
    f = SafetyFilter("d1", Topics(["war", "scary  movie", "打架"]), Lines.load(), lambda: chat[0])
    hits = {t: await f.find(t) for t in [
        "Tell me about WARS", "a scary movie please", "他们在打架吗", "that award was nice", "warm milk",
        "我妈妈的包是红色的", "what the fuck", "你真是个傻逼", "my grandma's cat"]}
    assert hits == {"Tell me about WARS": "war", "a scary movie please": "scary  movie", "他们在打架吗": "打架",
                    "that award was nice": None, "warm milk": None, "我妈妈的包是红色的": None,
                    "what the fuck": "fuck", "你真是个傻逼": "傻逼", "my grandma's cat": None}

    out = await f.words("他们在打架吗")
    assert isinstance(out, Instead) and out.line == Lines.load().get("safety_redirect", "zh")
    await out.confirm()
    assert f.care.flags == [("打架", "他们在打架吗", None, out.line)]
    chat[0] = False          # translation, a lesson: not filtered
    assert await f.words("他们在打架吗") == "他们在打架吗"


class Services:
    """What a Chain reads of the process's services."""

    def __init__(self, care):
        self.config = {}
        self.lines = Lines.load()
        self.care = care


async def test_a_blocked_reply_sentence_ends_the_reply_and_is_flagged_only_once_the_words_are_final():
    for final in (True, False):
        care = Topics(["ghosts"], "Let's sing!")
        chain = Chain(Services(care), "d1")
        assert await chain.heard("what are stars") == "what are stars"

        async def reply():
            for s in ("Stars are far away.", "Some say ghosts live there.", "Let's count them!"):
                yield s
        gate = asyncio.get_running_loop().create_future()
        said = []
        assert [s async for s in chain.spoken(reply(), gate, said)] == ["Stars are far away.", "Let's sing!"]
        assert said == ["Stars are far away.", "Let's sing!"] and care.flags == []
        gate.set_result(final)          # the child stopped there, or went on
        await asyncio.gather(*chain._confirming)
        assert care.flags == ([("ghosts", "what are stars", "Some say ghosts live there.", "Let's sing!")]
                                if final else [])
