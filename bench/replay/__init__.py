"""`python -m bench replay`: a run walked again under other clearing policies (walk.py, policies.py, command.py)."""
