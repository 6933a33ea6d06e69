"""python -m perf [--quick] [--out CSV]: see perf/run.py."""

import sys

from perf.run import main

sys.exit(main())
