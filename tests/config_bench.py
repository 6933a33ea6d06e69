"""One real `python -m bench run --config` of the checkout in a folder of its own, read back: its row, its trace
and its run folder (the real-model tests of tests/e2e/ share one such run per module)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.results.append import read_rows

CHECKOUT = Path(__file__).resolve().parents[1]


def run_config(folder: Path, config: str, timeout_s: float) -> tuple[dict[str, str], list[dict[str, Any]], Path]:
    """The bench run with `config` (bench.yaml's text) in `folder`, which must end with exactly one row."""
    (folder / "bench.yaml").write_text(config)
    out = folder / "results.csv"
    args = [sys.executable, "-m", "bench", "run", "--config", str(folder / "bench.yaml"), "--out", str(out)]
    done = subprocess.run(args, cwd=CHECKOUT, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [row] = read_rows(out)
    run_dir = folder / "runs" / row["run_id"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return row, events, run_dir


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The trace's events of one kind, in order."""
    return [e for e in events if e["event"] == kind]
