"""`make perf` / `python -m perf [--quick] [--out CSV] [--only NAME]`: every perf module's figures in one table.

Each module in perf/ that defines `figures(quick: bool) -> list[dict]` (perf/figures.py says the shape) is run in
turn, side by side in one process: each figure the median of several repeats with its range, against its target.
The table is printed and written to results/perf-<date>.csv (or --out). The exit status is 1 when a target is
missed (each missed one listed with its value), a module crashed, or (in a full run) a figure could not be measured
here: it is listed apart as "not measured here: reason", so a target whose prerequisite is missing cannot pass unseen.

--quick (what `make test` runs): one repeat of everything, small inputs, the scripted server where a real run would
take minutes; its figures are not judged, but a module that fails to import or crashes fails it.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import pkgutil
import subprocess
import sys
import traceback
from datetime import datetime
from pathlib import Path

from perf.figures import Figure, Unavailable

PERF = Path(__file__).resolve().parent
ROOT = PERF.parent
NOT_FIGURES = {"run", "figures", "__main__"}
COLUMNS = ["figure", "unit", "median", "min", "max", "repeats", "target", "passed", "module"]


def perf_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(PERF)]) if m.name not in NOT_FIGURES)


def collect(quick: bool, only: list[str] | None = None) -> tuple[list[Figure], list[str], list[str]]:
    """(figures, modules that crashed with why, modules unavailable here with why)."""
    figures: list[Figure] = []
    crashed, unavailable = [], []
    for name in perf_modules():
        if only and name not in only:
            continue
        try:
            module = importlib.import_module(f"perf.{name}")
            if not hasattr(module, "figures"):
                continue
            found = module.figures(quick)
        except Unavailable as e:
            unavailable.append(f"{name}: {e}")
            continue
        except Exception as e:  # a crashed benchmark is a failure of make perf, named with its cause
            traceback.print_exc()
            crashed.append(f"{name}: {type(e).__name__}: {e}")
            continue
        unavailable += [f"{f['figure']}: {f['not_measured']}" for f in found if "not_measured" in f]
        judged = [{**f, "passed": None} if quick else f for f in found if "not_measured" not in f]  # quick: not judged
        figures += [{**f, "module": name} for f in judged]
    return figures, crashed, unavailable


def number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def table(figures: list[Figure]) -> str:
    headers = ["figure", "median", "range", "unit", "target", ""]
    rows = [
        [
            f["figure"],
            number(f["median"]),
            f"{number(f['min'])}–{number(f['max'])} ({f['repeats']})",
            f["unit"],
            f["target"] or "—",
            {True: "ok", False: "MISSED", None: ""}[f["passed"]],
        ]
        for f in figures
    ]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [headers, *rows]]
    return "\n".join(lines)


def write_csv(path: Path, figures: list[Figure]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow([*COLUMNS, "git_sha"])
        for fig in figures:
            passed = "" if fig["passed"] is None else str(fig["passed"]).lower()
            writer.writerow([*(fig[c] if c != "passed" else passed for c in COLUMNS), sha.strip()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, small inputs, figures not judged")
    parser.add_argument("--out", help="the CSV to write (default: results/perf-<date>.csv)")
    parser.add_argument("--only", action="append", help="run only this module (repeatable)")
    args = parser.parse_args(argv)
    figures, crashed, unavailable = collect(args.quick, args.only)
    print(table(figures))
    out = Path(args.out) if args.out else ROOT / "results" / f"perf-{datetime.now():%Y%m%d-%H%M%S}.csv"
    write_csv(out, figures)
    print(f"\nwrote {out}")
    for line in unavailable:
        print(f"not measured here: {line}")
    missed = [f for f in figures if f["passed"] is False]
    for f in missed:
        print(f"MISSED: {f['figure']} = {number(f['median'])} {f['unit']} (target {f['target']})", file=sys.stderr)
    for line in crashed:
        print(f"CRASHED: {line}", file=sys.stderr)
    return 1 if missed or crashed or (unavailable and not args.quick) else 0
