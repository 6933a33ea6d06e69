import unittest

from tally_counter import TallyCounter


class TallyCounterTest(unittest.TestCase):
    def test_a_new_counter_counts_nothing(self):
        counter = TallyCounter()
        self.assertEqual(counter.total(), 0)

    def test_an_unseen_label_counts_zero(self):
        counter = TallyCounter()
        self.assertEqual(counter.count("red"), 0)

    def test_adding_once(self):
        counter = TallyCounter()
        counter.add("red")
        self.assertEqual(counter.count("red"), 1)

    def test_adding_several_times_at_once(self):
        counter = TallyCounter()
        counter.add("blue", times=3)
        counter.add("blue")
        self.assertEqual(counter.count("blue"), 4)

    def test_total_sums_every_label(self):
        counter = TallyCounter()
        counter.add("red", 2)
        counter.add("green", 5)
        self.assertEqual(counter.total(), 7)

    def test_reset_forgets_everything(self):
        counter = TallyCounter()
        counter.add("red", 2)
        counter.reset()
        self.assertEqual(counter.total(), 0)

    def test_negative_times_are_refused(self):
        counter = TallyCounter()
        with self.assertRaises(ValueError) as err:
            counter.add("red", -1)
        self.assertEqual(str(err.exception), "times must be positive")
