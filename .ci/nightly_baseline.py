#!/usr/bin/env python3
"""The nightly's baseline, decided so that a night can never pass blind.

Usage: .ci/nightly_baseline.py PREVIOUS_DIR [NIGHT_CSV DECLARED_FILE]
Prints the earlier nights to compare with, one path a line (the nights since the last declared baseline). Prints
nothing and exits 0 when this night is not compared, saying why on stderr: a new baseline was declared
(NEW_BASELINE: what changed on purpose), this night ran another llama.cpp build than the baseline's newest night (a
night is never gated against another build: the change is written to DECLARED_FILE, and the night starts a new
baseline as a declared one does), or it is the first night, which only counts as such when declared
(FIRST_NIGHT=true) or when no successful nightly run exists at all. Exits 1 with a line saying what to do when
earlier nights exist but their history did not come (an expired, deleted or moved artifact).

Environment: FIRST_NIGHT, NEW_BASELINE; GITHUB_API_URL, GITHUB_REPOSITORY, GH_TOKEN and DEFAULT_BRANCH to ask
GitHub how many successful runs of nightly.yml the default branch has.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

MARKER = "baseline.txt"  # in the history: the night a declared baseline starts from, a tab, what changed
NIGHT_NAME = re.compile(r"^nightly-(\d{8})-(?:(\d+)-)?")  # older nights' names have no run id
RERUN = "rerun this workflow (Run workflow) with"


def night_order(path: Path) -> tuple[str, int, str]:
    """Nights in the order they ran: by date, then by run id (a number: 99 comes before 100)."""
    found = NIGHT_NAME.match(path.name)
    return (found.group(1), int(found.group(2) or 0), path.name) if found else ("", 0, path.name)


def baseline_nights(previous: Path) -> list[Path]:
    """The earlier nights from the last declared baseline on (all of them when none was declared)."""
    nights = sorted(previous.glob("nightly-*.csv"), key=night_order)
    marker = previous / MARKER
    if marker.is_file():
        start = night_order(Path(marker.read_text().split("\t", 1)[0].strip()))
        nights = [night for night in nights if night_order(night) >= start]
    return nights


def builds(night: Path) -> set[str]:
    """The llama.cpp builds a night's servers ran (the server_build column)."""
    with night.open(newline="", encoding="utf-8", errors="replace") as f:
        return {row.get("server_build") or "" for row in csv.DictReader(f)} - {""}


def build_change(nights: list[Path], night: Path | None) -> str | None:
    """`b1 -> b2` when `night` ran another llama.cpp build than the newest earlier night; None when the same, or
    when either does not say."""
    if night is None or not nights:
        return None
    before, now = builds(nights[-1]), builds(night)
    if not before or not now or before == now:
        return None
    return f"{', '.join(sorted(before))} -> {', '.join(sorted(now))}"


def successful_runs() -> int | None:
    """How many successful runs of nightly.yml the default branch has; None when GitHub could not be asked."""
    api, repo = os.environ.get("GITHUB_API_URL", ""), os.environ.get("GITHUB_REPOSITORY", "")
    branch = os.environ.get("DEFAULT_BRANCH", "main")
    url = f"{api}/repos/{repo}/actions/workflows/nightly.yml/runs?status=success&branch={branch}&per_page=1"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {os.environ.get('GH_TOKEN', '')}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(json.load(response)["total_count"])
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
        return None


def decide(previous: Path, night: Path | None = None) -> tuple[list[Path], str, bool, str]:
    """(nights to compare with, what to say, whether the night fails, the new baseline this night starts undeclared:
    a llama.cpp build change, or empty)."""
    reason = os.environ.get("NEW_BASELINE", "").strip()
    if reason:
        return (
            [],
            f"New baseline from this night, declared: {reason}. Nothing is compared; later nights are.",
            False,
            "",
        )
    nights = baseline_nights(previous)
    if change := build_change(nights, night):
        said = (
            f"New baseline from this night: the llama.cpp build changed ({change}). A night on another build is not "
            "gated against the old one; later nights compare with this one."
        )
        return [], said, False, f"llama.cpp build {change}"
    if nights:
        return nights, "", False, ""
    if os.environ.get("FIRST_NIGHT", "").strip().lower() == "true":
        return [], "First night, as declared (first_night): nothing to compare with; later nights are.", False, ""
    runs = successful_runs()
    if runs == 0:
        return [], "First night: no successful nightly run exists yet; nothing to compare with.", False, ""
    if runs is None:
        return (
            [],
            (
                "FAIL  no earlier nights in previous/, and GitHub could not say whether any exist: if this is "
                f"the first night, {RERUN} first_night=true"
            ),
            True,
            "",
        )
    return (
        [],
        (
            f"FAIL  no earlier nights in previous/, though {runs} successful nightly runs exist: their bench-history "
            f"artifact expired, was deleted or moved. Restore it, or {RERUN} first_night=true to start the history anew"
        ),
        True,
        "",
    )


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__, file=sys.stderr)
        return 2
    nights, said, failed, starts = decide(Path(argv[1]), Path(argv[2]) if len(argv) == 4 else None)
    if starts:
        Path(argv[3]).write_text(starts + "\n", encoding="utf-8")
    if said:
        print(said, file=sys.stderr)
    for night in nights:
        print(night)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
