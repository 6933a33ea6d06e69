import unittest

from word_stats import longest_word, unique_words, word_count, words


class WordsTest(unittest.TestCase):
    def test_words_are_lower_cased(self):
        self.assertEqual(words("Red red GREEN"), ["red", "red", "green"])


class WordCountTest(unittest.TestCase):
    def test_counts_every_word(self):
        self.assertEqual(word_count("the cat saw the dog"), 5)

    def test_an_empty_text_has_no_words(self):
        self.assertEqual(word_count(""), 0)


class LongestWordTest(unittest.TestCase):
    def test_the_longest_word(self):
        self.assertEqual(longest_word("a tiny elephant"), "elephant")

    def test_the_first_of_equal_length_wins(self):
        self.assertEqual(longest_word("cat dog"), "cat")


class UniqueWordsTest(unittest.TestCase):
    def test_unique_words_in_order_of_first_use(self):
        self.assertEqual(unique_words("b a b c a"), ["b", "a", "c"])
