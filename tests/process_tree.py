"""The processes of a bench as this host sees them in /proc: for the tests that stop a bench while its grading runs
(tests/bench/run/test_grading_infra.py, and on Slurm, tests/integration/test_slurm_submit.py), whatever session or
job its processes are in."""

from __future__ import annotations

from pathlib import Path


def command_lines() -> dict[int, bytes]:
    """Every process's command line, its arguments NUL-separated (those that ended meanwhile left out)."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found[int(cmdline.parent.name)] = cmdline.read_bytes()
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process under `pid`, whatever session it made (as Slurm's process tracking holds a job's processes)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        found += (kids := children.get(todo.pop(), []))
        todo += kids
    return found


def grading_pytest_runs(pid: int) -> bool:
    """Whether a grading pytest (the one that writes a junit report) runs under `pid`."""
    lines = command_lines()
    return any(b"junitxml" in lines.get(child, b"") for child in descendants(pid))


def bench_runs(*words: str) -> list[int]:
    """The `python -m bench run` processes whose command line holds each of `words`."""
    wanted = [b"bench\0run\0", *(word.encode() for word in words)]
    return [pid for pid, line in command_lines().items() if all(word in line for word in wanted)]
