"""What a Chinese-speaking child says to the companion: the `asr_zh` bench's script.

Short utterances in the kinds children use: why-questions, requests to the
device (its command words among them), 成语, numbers and sums, animals,
and a few with English words in them (code-switched). ENGLISH is the set
beside it, the same kinds in English. The texts are the reference the
character error rate is measured against (bench/asr_zh.py).
"""

QUESTIONS = (
    "猫为什么会呼噜？", "天空为什么是蓝色的？", "月亮为什么会变形状？", "鱼在水里怎么呼吸？",
    "恐龙为什么会灭绝？", "彩虹是怎么来的？", "为什么会下雨？", "星星为什么会眨眼睛？",
    "我的头发为什么是黑色的？", "鸟为什么会飞？", "太阳晚上去哪里了？", "为什么要刷牙？",
    "冬天为什么会下雪？", "大海为什么是咸的？", "蚂蚁有没有耳朵？", "为什么树叶秋天会变黄？",
    "打雷的时候为什么先看到闪电？", "人为什么要睡觉？", "蜜蜂是怎么做蜂蜜的？", "小宝宝是从哪里来的？",
    "地球是圆的吗？", "飞机为什么不会掉下来？", "冰为什么是滑的？", "为什么我不能吃太多糖？",
    "火山里面是什么？", "长颈鹿的脖子为什么那么长？", "风是从哪里来的？", "为什么天黑了？",
    "你会唱歌吗？", "你今天开心吗？", "你叫什么名字？", "你几岁了？", "你喜欢吃什么？",
    "明天会下雨吗？", "今天星期几？", "现在几点了？", "妈妈什么时候回来？", "我们什么时候去动物园？",
    "企鹅冷不冷？", "为什么猫喜欢抓老鼠？",
)
REQUESTS = (
    "给我讲一个故事。", "给我讲一个关于龙的故事。", "唱一首儿歌吧。", "我们来聊天吧。", "聊会天吧。",
    "打开翻译。", "开始复读。", "切换模式。", "声音大一点。", "声音小一点。", "把音量调到五十。",
    "停下来。", "暂停一下。", "继续播放。", "播放第一课。", "再听一遍。", "关机吧。", "我要睡觉了。",
    "讲一个笑话。", "教我说英语。", "明天早上七点叫我起床。", "提醒我喝水。", "我想听小兔子的故事。",
    "换一首歌。", "讲一个睡前故事。", "我们玩猜谜语吧。", "给我出一道数学题。", "你能帮我数数吗？",
    "陪我玩一会儿。", "再讲一个。", "我不想听了。", "声音太大了。", "晚安，小智。", "早上好，小智。",
    "谢谢你，小智。", "我今天画了一只小狗。", "我今天在幼儿园交了新朋友。", "我的牙齿掉了一颗。",
    "我有点害怕。", "我饿了。",
)
IDIOMS = (
    "一心一意", "三心二意", "画蛇添足", "守株待兔", "亡羊补牢", "井底之蛙", "对牛弹琴", "狐假虎威",
    "拔苗助长", "自相矛盾", "掩耳盗铃", "叶公好龙", "刻舟求剑", "半途而废", "一石二鸟", "七上八下",
    "五颜六色", "九牛一毛", "马到成功", "鸡飞狗跳", "什么是画蛇添足？", "守株待兔是什么意思？",
    "给我讲讲亡羊补牢的故事。", "井底之蛙说的是什么？",
)
NUMBERS = (
    "一加一等于几？", "三加五等于多少？", "十减四是几？", "二乘以三等于几？", "一百", "九十九",
    "我今年五岁了。", "我有三个苹果。", "从一数到十。", "一二三四五。", "六七八九十。", "二十一",
    "五十加五十是多少？", "一年有几个月？", "一个星期有七天。", "我家住在八楼。", "我的生日是三月十二号。",
    "十个手指头。", "两只老虎。", "一千比一百大多少？",
)
ANIMALS = (
    "大象", "长颈鹿", "熊猫", "老虎", "狮子", "小猫", "小狗", "兔子", "猴子", "企鹅", "海豚", "鲸鱼",
    "恐龙", "蝴蝶", "蚂蚁", "乌龟", "青蛙", "小鸡", "鸭子", "老鼠", "大熊猫吃什么？", "狮子是森林之王吗？",
    "小兔子喜欢吃胡萝卜。", "海豚会说话吗？", "乌龟能活多少年？", "斑马身上为什么有条纹？",
)
CODE_SWITCHED = (
    "我想听 Baby Shark。", "apple 是什么意思？", "我会说 hello。", "给我放 ABC 的歌。",
    "小智，dog 怎么说？", "我最喜欢 Peppa Pig。", "cat 是猫吗？", "用英语怎么说谢谢？ thank you 对吗？",
    "我们玩 game 吧。", "OK，再来一次。", "我喜欢 pink 色。", "bye bye，小智。",
)
ZH = QUESTIONS + REQUESTS + IDIOMS + NUMBERS + ANIMALS + CODE_SWITCHED

ENGLISH = (
    "Why is the sky blue?", "Why do cats purr?", "How do fish breathe under water?", "Where does the sun go at night?",
    "Why do I have to brush my teeth?", "What do dinosaurs eat?", "Can you sing me a song?", "Tell me a story.",
    "Tell me a story about a dragon.", "Turn the volume up.", "Turn it down a little.", "Stop.", "Play lesson one.",
    "Play it again.", "Tell me a joke.", "Good night.", "Good morning.", "What is your name?", "How old are you?",
    "What day is it today?", "One plus one.", "What is three plus five?", "Count from one to ten.",
    "I am five years old.", "I have three apples.", "Elephant.", "Giraffe.", "Panda.", "Penguin.", "Dolphin.",
    "Butterfly.", "Why do zebras have stripes?", "Can penguins fly?", "How long do turtles live?",
    "I drew a picture of my dog today.", "I lost a tooth today.", "I am a little scared.", "I am hungry.",
    "Wake me up at seven tomorrow.", "Let's play a guessing game.",
)
# What the device's own command words and phrases are: Whisper's prompt may name them (bench/asr_zh.py).
COMMAND_WORDS = ("小智", "切换模式", "聊天", "打开翻译", "开始复读", "播放", "暂停", "音量")
