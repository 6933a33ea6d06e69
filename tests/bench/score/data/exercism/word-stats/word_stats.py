def words(text):
    """The words of `text`, lower-cased, split on whitespace."""
    return text.lower().split()


def word_count(text):
    pass


def longest_word(text):
    pass


def unique_words(text):
    pass
