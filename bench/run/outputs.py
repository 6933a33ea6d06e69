"""Where a bench writes: its results file (refused at once when it cannot be written; named by date and commit when
not given), the log beside it, and the folder of a run cut short, marked so that no later command takes it for a
measured one."""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path

from bench.errors import ConfigError
from bench.provenance import git_sha

log = logging.getLogger(__name__)
INTERRUPTED_SUFFIX = ".interrupted"  # the folder of a run that was cut short: results/runs/<run_id>.interrupted


def check_writable(out: Path) -> None:
    """Refuse at once an --out the bench could not write, rather than after the first run."""
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder: name a CSV file, e.g. {out / 'results.csv'}")
    parent = next((p for p in [out.parent, *out.parent.parents] if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise ConfigError(f"--out {out}: {parent} is a file, not a folder; choose another path")
    probe = out if out.exists() else parent
    if not os.access(probe, os.W_OK):
        raise ConfigError(f"--out {out}: {probe} is not writable by this user; choose another path")


def mark_interrupted(run_dir: Path) -> None:
    """A run cut short (Ctrl-C, SIGTERM, a full disk) has no row: its folder is renamed `<run_id>.interrupted`, so
    no later command takes it for a measured run (a rename needs no free space)."""
    if not run_dir.is_dir():
        return
    try:
        run_dir.rename(run_dir.with_name(run_dir.name + INTERRUPTED_SUFFIX))
    except OSError as e:
        log.warning("could not mark %s as interrupted: %s", run_dir, e.strerror or e)


def log_file(out: Path) -> Path:
    """A bench's log, beside its results file: every diagnostic from DEBUG up, appended by each bench on it."""
    return out.with_name(out.name + ".log")


def default_out(checkout: Path) -> Path:
    """A new results file in `checkout`'s results/, named by date and commit."""
    sha = git_sha(checkout)[:7] or "nogit"
    return checkout / "results" / f"{datetime.now():%Y%m%d-%H%M%S}-{sha}.csv"
