import unittest

from order_totals import order_total
from sample_orders import EMPTY, MIXED, SMALL


class OrderTotalsTest(unittest.TestCase):
    def test_an_empty_order_costs_nothing(self):
        self.assertEqual(order_total(EMPTY), 0)

    def test_one_item_several_times(self):
        self.assertEqual(order_total(SMALL), 120)

    def test_several_items(self):
        self.assertEqual(order_total(MIXED), 1680)

    def test_an_unknown_item_is_refused(self):
        with self.assertRaises(KeyError):
            order_total([("caviar", 1)])
