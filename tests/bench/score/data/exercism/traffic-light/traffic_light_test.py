import unittest

from traffic_light import AMBER, GREEN, RED, next_light


class TrafficLightTest(unittest.TestCase):
    def test_red_is_followed_by_green(self):
        self.assertEqual(next_light(RED), GREEN)

    def test_green_is_followed_by_amber(self):
        self.assertEqual(next_light(GREEN), AMBER)

    def test_amber_is_followed_by_red(self):
        self.assertEqual(next_light(AMBER), RED)
