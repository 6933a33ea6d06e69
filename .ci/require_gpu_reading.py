#!/usr/bin/env python3
"""The nightly's check that a night measured GPU memory: every run that was not an infrastructure failure has
Flint's peak. A night whose reading became unavailable (a driver gone, NVML refused) fails here, in one line per
run naming why (its gpu_mem_method), instead of passing with empty columns that the memory gate skips.

Usage: .ci/require_gpu_reading.py NIGHT.csv      exit 1 when a run has no reading
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def missing_readings(path: Path) -> list[str]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    lines = [
        f"{row.get('run_id', '?')}: no GPU reading for Flint ({row.get('gpu_mem_method') or 'no method recorded'})"
        for row in rows
        if row.get("stop_reason") != "infra_error" and not (row.get("peak_gpu_mib_flint") or "").strip()
    ]
    return lines if rows else [f"{path}: no runs"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    lines = missing_readings(Path(argv[1]))
    for line in lines:
        print(f"FAIL  {line}")
    if not lines:
        print(f"ok    every run of {argv[1]} has Flint's GPU peak")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
