#!/usr/bin/env python3
"""Whether a results file holds runs the infrastructure cut short that no later row measured (stop_reason
infra_error, bench.results.append.lost_runs): the nightly then runs the bench once more with RESUME=1, which runs
exactly those again, so one flaky failure is redone rather than failing the night.

Usage: .ci/lost_runs.py RESULTS_CSV
Exit status: 0 none lost; 1 some lost (each named on stdout).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench.results.append import lost_runs, read_rows


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lost = lost_runs(read_rows(Path(argv[1])))
    for row in lost:
        print(f"lost to the infrastructure: {row.get('run_id')}: {row.get('error')}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
