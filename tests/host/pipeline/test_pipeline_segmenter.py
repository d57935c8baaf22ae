from xiaozhi_server.pipeline.segmenter import SentenceSegmenter


def segment(text, step=2, **kw):
    s = SentenceSegmenter(**kw)
    out = []
    for i in range(0, len(text), step):
        out += s.feed(text[i:i + step])
    return out + s.flush()


def test_english_sentences_numbers_and_abbreviations():
    text = "Hello, Mr. Smith. Pi is about 3.14 today! It costs 1,000 dollars, right? J. K. Rowling wrote it."
    assert segment(text) == ["Hello, Mr. Smith.", "Pi is about 3.14 today!",
                             "It costs 1,000 dollars, right?", "J. K. Rowling wrote it."]


def test_chinese_first_clause_comes_early_then_whole_sentences():
    text = "好的，我来给你讲一个故事，从前有一座山，山上有座庙。庙里有个老和尚！你喜欢吗？"
    assert segment(text) == ["好的，我来给你讲一个故事，", "从前有一座山，山上有座庙。", "庙里有个老和尚！", "你喜欢吗？"]


def test_first_sentence_is_emitted_as_soon_as_its_end_is_certain():
    s = SentenceSegmenter()
    assert s.feed("The sun is very bright today") == []
    assert s.feed(".") == []          # could still be 3.14 or a closing quote
    assert s.feed(" I") == ["The sun is very bright today."]
    assert s.flush() == ["I"]


def test_english_first_clause_needs_enough_words():
    assert segment("Well, I think that we should go to the park, because it is sunny.") == [
        "Well, I think that we should go to the park,", "because it is sunny."]


def test_quotes_stay_with_their_sentence_and_mixed_scripts():
    assert segment('He said "hi!" Then he left.') == ['He said "hi!"', "Then he left."]
    assert segment("我喜欢 apple。You like 香蕉! OK") == ["我喜欢 apple。", "You like 香蕉!", "OK"]


def test_long_sentence_is_broken_at_a_clause_after_max_units():
    text = "one two three four five six seven eight, nine ten eleven twelve, thirteen."
    assert segment("Hi. " + text, max_units=10) == ["Hi.", "one two three four five six seven eight, nine ten eleven twelve,", "thirteen."]


def test_punctuation_only_and_empty_pieces_are_not_emitted():
    assert segment("……！！好。") == ["……！！好。"]
    assert segment("   ") == []
