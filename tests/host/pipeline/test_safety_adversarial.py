"""What issue 37's attacker and a child testing limits got past the filter,
each now caught, and the everyday words that look like a topic, now
passed: the filter as a parent meets it (their topics, the redirect line
spoken in place of the words or the rest of the reply)."""
import asyncio

from xiaozhi_server.pipeline.chain import Chain
from xiaozhi_server.pipeline.safety import Instead, SafetyFilter
from xiaozhi_server.text.lines import Lines

TOPICS = ["ghost", "鬼", "打架", "knife", "杀"]


class Topics:
    def __init__(self, topics, synonyms=None):
        self.value = {"blocked_topics": topics, "redirect_line": "Let's sing!", "synonyms": synonyms or {}}
        self.flags = []

    async def topics(self, device_id):
        return self.value

    async def add_flag(self, device_id, topic, child_said, reply_blocked, line):
        self.flags.append((topic, child_said, reply_blocked))


def _filter(topics=TOPICS, synonyms=None):
    return SafetyFilter("d1", Topics(topics, synonyms), Lines.load(), lambda: True)


async def test_spellings_that_slipped_past_are_caught():
    f = _filter()
    said = {
        "tell me a gh\u200bost story": "ghost",            # zero-width space
        "tell me a g h o s t story": "ghost",               # spaces between letters
        "a g.h.o.s.t story": "ghost",
        "a gh\u03bfst story": "ghost",                      # Greek omicron
        "a \u202eghost\u202c story": "ghost",                # bidi override
        "that house looks ghostly": "ghost",                # inflections
        "where do they keep the knives": "knife",
        "a phantom in the attic": "ghost",                  # the topic's synonyms
        "我看见一个幽灵": "ghost",                             # (a synonym of both: the first topic)
        "他们在打鬥": "打架",                                 # Traditional
        "我们来da jia吧": "打架",                             # pinyin
        "you are a b1tch": "bitch",                         # leet
        "你是个 shabi": "shabi",
        "草泥马": "草泥马",                                    # homophones of insults
        "尼玛的": "尼玛",
        "他媽的": "他妈",
    }
    got = {text: await f.find(text) for text in said}
    assert got == said


async def test_everyday_words_that_contain_a_topic_pass():
    f = _filter()
    harmless = ["你真是个机灵鬼", "我喜欢打架子鼓", "大家好", "what skills do you have", "I play the knight",
                "我妈妈的包是红色的", "你妈妈在家吗", "that award was nice", "我笑死了", "da jia hao",
                "杀毒软件", "u p the hill", "我草莓吃完了", "是他骂的我", "沙壁上有画"]
    got = {text: await f.find(text) for text in harmless}
    assert got == {text: None for text in harmless}


async def test_a_parents_own_synonyms_replace_the_built_in_ones():
    f = _filter(["ghost"], {"ghost": ["spectre"]})
    assert await f.find("a spectre came") == "ghost"
    assert await f.find("a phantom came") is None       # the parent took it out of the list
    assert await f.find("a ghost came") == "ghost"


class Services:
    def __init__(self, care):
        self.config = {}
        self.lines = Lines.load()
        self.care = care


async def _spoken(sentences, topics=TOPICS):
    chain = Chain(Services(Topics(topics)), "d1")

    async def reply():
        for s in sentences:
            yield s
    gate = asyncio.get_running_loop().create_future()
    return [s async for s in chain.spoken(reply(), gate)]


async def test_a_word_split_by_a_sentence_end_is_not_spoken_whole():
    assert await _spoken(["小朋友们喜欢打。", "架是不对的。", "我们唱歌吧。"]) == ["小朋友们喜欢打。", "Let's sing!"]
    # (no topic here: "kill yourself" is one of the built-in insults)
    assert await _spoken(["You should kill.", "Yourself is who you are.", "Bye."], ["ghost"]) == [
        "You should kill.", "Let's sing!"]
    # a topic spaced out or with a zero-width character in the model's reply
    assert await _spoken(["Once upon a time.", "A g h o s t came.", "The end."]) == ["Once upon a time.",
                                                                                    "Let's sing!"]
    assert await _spoken(["A gh\u200bost came."]) == ["Let's sing!"]
    # two harmless sentences stay so when read together
    assert await _spoken(["我们去打球。", "架子上有书。"]) == ["我们去打球。", "架子上有书。"]


async def test_the_childs_words_are_replaced_and_flagged():
    f = _filter()
    out = await f.words("tell me a gh\u200bost story")
    assert isinstance(out, Instead) and out.line == "Let's sing!"
    await out.confirm()
    assert f.care.flags == [("ghost", "tell me a gh\u200bost story", None)]
