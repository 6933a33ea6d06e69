import unittest

from leap import days_in_year


class LeapHiddenTest(unittest.TestCase):
    def test_a_year_not_divisible_by_four_is_common(self):
        self.assertEqual(days_in_year(2015), 365)

    def test_a_year_divisible_by_four_is_a_leap_year(self):
        self.assertEqual(days_in_year(1996), 366)

    def test_a_century_is_common(self):
        self.assertEqual(days_in_year(1900), 365)

    def test_every_four_hundred_years_a_century_is_a_leap_year(self):
        self.assertEqual(days_in_year(2000), 366)

    def test_years_around_the_rules(self):
        for year, days in [(1997, 365), (2024, 366), (2100, 365), (2400, 366)]:
            with self.subTest(year=year):
                self.assertEqual(days_in_year(year), days)
