"""A finished run graded, and told apart from a grading the infrastructure cut short.

A grading session that gave no whole report counts the tests it did not report as failed (bench.score.verdict): the
code under test must not turn a failure into "not measured" by killing its pytest. Two causes are the bench's own,
seen from outside the grading, and make the run infra_error (its counts empty, `--resume` runs it again): the bench
was asked to stop while the grading ran, in the run's thread or beside the next run (SIGTERM from scancel or the
kubelet reaches the grading pytest too), and the temporary folder the grading works in is full (a probe write there
fails). A grading that could not start (its copy could not be made for want of space) raises ScoringError, which the
runner records as infra_error.
"""

from __future__ import annotations

import threading
from pathlib import Path

from bench.results.disk import temp_full
from bench.run.finishing import FINISHING
from bench.score.graders import Grader
from bench.score.grading import Score, score_run_dir


def grade_run(run_dir: Path, grader: Grader, checkout: Path) -> tuple[Score | None, str | None]:
    """The run in `run_dir` graded: (its score, None), or (None, why the grading says nothing of the agent).
    `checkout`: this repository, whose fixtures the run's are when it recorded no other root."""
    stops = FINISHING.stops
    score = score_run_dir(run_dir, grader, checkout=checkout)
    if not score.voided:
        return score, None
    lost = f"grading pytest gave no whole report ({score.error})"
    # a stop held for this thread, or one that reached the bench while the grading ran beside the next run
    if FINISHING.holding(threading.get_ident()) or FINISHING.stops != stops:
        return None, f"grading was cut short: the bench was asked to stop while it ran; {lost}"
    if full := temp_full():
        return None, f"grading could not run: {full}; {lost}"
    return score, None
