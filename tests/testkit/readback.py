"""How well Whisper reads a voice back: character error rate on Mandarin.

`SENTENCES` are twenty things a companion says to a young child. `cer()`
compares what was said with what Whisper heard after both are put in one
form: simplified characters (Whisper base often writes traditional ones,
which is not the voice's fault), digits as Chinese numerals, punctuation
and spaces dropped.
"""
import re

SENTENCES = (
    "你好，我是小智，很高兴认识你。", "今天天气很好，我们去公园玩吧。", "小猫喜欢吃鱼，小狗喜欢啃骨头。",
    "你今天在幼儿园学了什么？", "我们一起来数数，一二三四五。", "睡觉前要记得刷牙哦。",
    "妈妈说吃完饭要洗碗。", "我给你讲一个小兔子的故事吧。", "小兔子住在森林里的一个小房子里。",
    "你最喜欢什么颜色？我喜欢蓝色。", "外面下雨了，出门要带雨伞。", "大象的鼻子很长很长。",
    "我们来唱一首歌好不好？", "明天是星期六，可以和爸爸去动物园。", "苹果是红色的，香蕉是黄色的。",
    "你真棒，这道题答对了！", "天黑了，月亮和星星出来了。", "喝水的时候要慢慢喝。",
    "小鸟在树上唱歌。", "晚安，祝你做个好梦。",
)
_DIGITS = dict(zip("0123456789", "零一二三四五六七八九"))
_WORD = re.compile(r"[^\W_]")


def normalize(text):
    import zhconv
    text = zhconv.convert(text, "zh-cn")
    return "".join(_DIGITS.get(c, c) for c in text if _WORD.match(c))


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        diag, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (ca != cb))
    return row[-1]


def errors(said, heard):
    """(character errors, characters said) after normalising both."""
    said, heard = normalize(said), normalize(heard)
    return edit_distance(said, heard), len(said)


def cer(pairs):
    """Character error rate over (said, heard) pairs."""
    counts = [errors(s, h) for s, h in pairs]
    return sum(e for e, _ in counts) / max(1, sum(n for _, n in counts))
