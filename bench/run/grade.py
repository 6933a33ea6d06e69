"""A finished run graded, and told apart from a grading the infrastructure cut short.

A grading session that gave no whole report counts the tests it did not report as failed (bench.score.verdict): the
code under test must not turn a failure into "not measured" by killing its pytest. Two causes are the bench's own,
seen from outside the grading, and make the run infra_error (its counts empty, `--resume` runs it again): the bench
was asked to stop while the grading ran, in the run's thread or beside the next run (SIGTERM from scancel or the
kubelet reaches the grading pytest too), the temporary folder the grading works in is full (a probe write there
fails), and the grader has no pytest (its supervisor, run isolated from the repository, could not import it: a
grading image without it). A grading that could not start (its copy could not be made for want of space) raises
ScoringError, which the runner records as infra_error. The preflight refuses a grader without pytest before the first
run (bench.run.preflight).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.containers.engine import role_labels
from bench.results.disk import temp_full
from bench.run.finishing import FINISHING
from bench.score.graders import DockerGrader, Grader
from bench.score.grading import Score, score_run_dir

# What Python says when the grader cannot import pytest (not pytest.__main__, not a pytest_* plugin).
NO_PYTEST = re.compile(r"No module named '?pytest'?(?![\w.])")


def has_pytest(grader: Grader) -> bool:
    """Whether the grader's own Python imports pytest, asked apart from any repository (-I: no current folder, no
    PYTHON* variables), so that nothing an agent wrote or printed decides it."""
    probe = ["python3", "-I", "-c", "import pytest"]
    if isinstance(grader, DockerGrader):
        try:
            grader.client.containers.run(
                grader.image, probe, remove=True, network_disabled=True, labels=role_labels("grader-probe")
            )
        except Exception:  # noqa: BLE001 - the SDK's ContainerError: it exited non-zero
            return False
        return True
    return subprocess.run([sys.executable, *probe[1:]], capture_output=True, timeout=60).returncode == 0


def lacks_pytest(grader: Grader, output: str) -> str | None:
    """What to do when `output` says the grader has no pytest and the grader, asked apart, confirms it; else None."""
    if not NO_PYTEST.search(output) or has_pytest(grader):
        return None
    where = f"the grading image {grader.image}" if isinstance(grader, DockerGrader) else "this Python"
    return (
        f"{where} has no pytest (No module named 'pytest'): grading needs python3 with pytest there "
        "(the sandbox image installs it: rebuild it, or give an image that holds it)"
    )


def grade_run(run_dir: Path, grader: Grader, checkout: Path) -> tuple[Score | None, str | None]:
    """The run in `run_dir` graded: (its score, None), or (None, why the grading says nothing of the agent).
    `checkout`: this repository, whose fixtures the run's are when it recorded no other root."""
    stops = FINISHING.stops
    score = score_run_dir(run_dir, grader, checkout=checkout)
    if not score.voided:
        return score, None
    lost = f"grading pytest gave no whole report ({score.error})"
    # a stop held for this thread, or one that reached the bench while the grading ran beside the next run
    if FINISHING.stopped_since(stops):
        return None, f"grading was cut short: the bench was asked to stop while it ran; {lost}"
    if full := temp_full():
        return None, f"grading could not run: {full}; {lost}"
    if missing := lacks_pytest(grader, score.error or ""):
        return None, f"grading could not run: {missing}"
    return score, None
