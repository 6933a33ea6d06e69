"""`make perf`: the harness's own costs, each figure measured side by side against its target (perf/run.py)."""
