import unittest

from leap import days_in_year


class CenturyTest(unittest.TestCase):
    def test_centuries(self):
        self.assertEqual([days_in_year(y) for y in (1800, 1900, 2000)], [365, 365, 366])
