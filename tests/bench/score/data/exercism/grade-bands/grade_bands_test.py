import unittest

from grade_bands import band


class GradeBandsTest(unittest.TestCase):
    def test_each_band_from_its_lowest_score(self):
        for score, letter in [(90, "A"), (80, "B"), (70, "C"), (60, "D"), (0, "F")]:
            with self.subTest(score=score):
                self.assertEqual(band(score), letter)

    def test_scores_just_below_a_band(self):
        for score, letter in [(89, "B"), (79, "C"), (69, "D"), (59, "F")]:
            with self.subTest(score=score):
                self.assertEqual(band(score), letter)

    def test_a_perfect_score(self):
        self.assertEqual(band(100), "A")

    def test_scores_out_of_range_are_refused(self):
        for score in (-1, 101):
            with self.subTest(score=score):
                with self.assertRaises(ValueError):
                    band(score)
