"""The agents the bench runs, as kinds: the article's (agent/) and others installed into a sandbox image of their own.

base.py says what a kind is, kinds.py lists them (KINDS), one module per agent. The bench meets the article's agent
only through bench/agents/article.py: no other bench module imports agent/ (tests/bench/test_layers.py).
"""
