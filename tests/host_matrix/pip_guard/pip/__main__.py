"""`python -m pip` in a child process of the host matrix: nothing is ever installed or downloaded.

This folder goes first on PYTHONPATH, so `sys.executable -m pip install ...` (the CUDA toolkit script's install of
PyPI's CUDA packages, about 1 GB) lands here: the arguments are appended to $PIP_GUARD for the test to read, and the
call fails, which ends make there.
"""

import os
import sys

with open(os.environ["PIP_GUARD"], "a") as record:
    record.write(" ".join(sys.argv[1:]) + "\n")
print("pip guard: the host matrix installs nothing", file=sys.stderr)
sys.exit(97)
