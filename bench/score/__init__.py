"""Grading: fixtures, the agent's work copy and diff, hidden tests in a clean copy, and `fixtures check`."""
