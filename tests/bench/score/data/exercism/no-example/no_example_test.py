import unittest

from no_example import answer


class T(unittest.TestCase):
    def test_answer(self):
        self.assertEqual(answer(), 42)
