import unittest

from event_hooks import fire, notify


class EventHooksTest(unittest.TestCase):
    def test_each_event_reaches_the_hook_in_order(self):
        seen = []
        self.assertEqual(notify(["a", "b", "c"], seen.append), 3)
        self.assertEqual(seen, ["a", "b", "c"])

    def test_no_events_no_calls(self):
        seen = []
        self.assertEqual(notify([], seen.append), 0)
        self.assertEqual(seen, [])

    def test_a_lambda_hook(self):
        total = []
        notify([1, 2, 3], lambda n: total.append(n * n))
        self.assertEqual(sum(total), 14)

    def test_fire_collects_answers(self):
        self.assertEqual(fire([str.upper, len, lambda e: e[::-1]], "abc"), ["ABC", 3, "cba"])
