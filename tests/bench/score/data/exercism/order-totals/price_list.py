"""Prices in cents, shared by the exercise and its tests."""

PRICES = {"apple": 40, "bread": 250, "cheese": 675}
