"""Every `bench ...` line of a code block in README.md and docs/ that can run on a fresh clone runs as written: each
whose files are all in the repository (the shipped example and its runs, the example CSVs), offline, in a copy of
results/ so that nothing it writes lands in the checkout. It must end with status 0 or 1 (a gate that tripped), never
2 (a one-line error: the docs drifted from the command) or 3 (a bug). The other lines name files a user makes
(results/before.csv, a run folder of theirs), a server, a GPU or a cluster; tests/test_doc_commands.py holds those to
the parser. The lines run are listed, so the test cannot pass by running none."""

from __future__ import annotations

import glob
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_doc_commands import PAGES, PREFIXES, command_lines

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("child_processes")]
ROOT = Path(__file__).resolve().parent.parent
# Commands that only read their inputs and write beside them or where --out says; the others start servers or runs.
READERS = {"compare", "report", "view", "history", "replay"}
NEEDS_MORE = ("--against", "--check-checkpoints")  # a llama-server: tests/integration/ runs those


def runnable(line: str) -> bool:
    """A reader's line whose every path argument (globs expanded) is a file or folder of the repository."""
    words = shlex.split(line)
    words = words[next(i for i, word in enumerate(words) if word.endswith("bench")) + 1 :]
    if not words or words[0] not in READERS or any(word in NEEDS_MORE for word in words):
        return False
    paths = [word for word in words[1:] if "/" in word and not word.startswith("-")]
    return bool(paths) and all(glob.glob(str(ROOT / path)) for path in paths)


def doc_lines() -> list[str]:
    lines = {line for page in PAGES for line, in_block in command_lines(page.read_text()) if in_block}
    return sorted(line for line in lines if line.startswith(PREFIXES) and runnable(line))


LINES = doc_lines()


def not_shipped(folder: str, names: list[str]) -> set[str]:
    """What local benches left in the checkout's results/ (their runs, logs, locks): not the docs' inputs."""
    top = Path(folder) == ROOT / "results"
    return {name for name in names if (top and name == "runs") or name.endswith((".log", ".lock"))}


def test_the_lines_that_can_run_here_are_found() -> None:
    commands = {shlex.split(line)[1] for line in LINES}
    assert len(LINES) >= 5 and commands >= {"compare", "report", "view", "replay"}, LINES


@pytest.mark.parametrize("line", LINES)
def test_a_documented_line_runs_as_written(line: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "results", tmp_path / "results", ignore=not_shipped)
    command = line.replace("bench ", f"{shlex.quote(sys.executable)} -m bench ", 1)
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    said = done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode in (0, 1), said
    assert "Traceback" not in done.stderr, said
