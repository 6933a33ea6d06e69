"""Orders the tests use, with their expected totals in cents."""

SMALL = [("apple", 3)]
MIXED = [("apple", 2), ("bread", 1), ("cheese", 2)]
EMPTY = []
