def words(text):
    """The words of `text`, lower-cased, split on whitespace."""
    return text.lower().split()


def word_count(text):
    return len(words(text))


def longest_word(text):
    return max(words(text), key=len)


def unique_words(text):
    return list(dict.fromkeys(words(text)))
