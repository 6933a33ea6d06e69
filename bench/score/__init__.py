"""Grading: hidden tests in a clean copy of the fixture with the agent's diff applied, and `fixtures check`."""
