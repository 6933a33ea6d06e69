"""`import pynvml` in a child process of the host matrix: the fake NVML of the recorded host $AGENTBENCH_HOST names.

This folder goes first on PYTHONPATH, so `make` and `bench run` import this module where they would import
nvidia-ml-py, and run their own decisions against the recorded host (tests/host_matrix/recorded.py, loaded by its
path: putting tests/ on sys.path would let tests/bench stand in for the bench package).
"""

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("host_matrix_recorded", Path(__file__).parents[1] / "recorded.py")
assert _spec is not None and _spec.loader is not None
_recorded = importlib.util.module_from_spec(_spec)
sys.modules["host_matrix_recorded"] = _recorded
_spec.loader.exec_module(_recorded)
sys.modules[__name__] = _recorded.Host.from_env().nvml()
