"""Scoring time per run (figures for perf/run.py): a run's folder graded as the bench grades it, the solution's
diff applied to a fresh copy and the hidden tests run, with the docker grader (where an engine answers) and the
local one."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from bench import ROOT
from bench.containers.engine import docker_client
from bench.containers.images import ensure_sandbox_image
from bench.errors import PrerequisiteError
from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import capture_diff, make_work_copy
from bench.score.graders import DockerGrader, Grader, LocalGrader
from bench.score.grading import score_run_dir
from perf.figures import Figure, figure, not_measured, timed

FIXTURE = "todo_repo"


def run_folder(folder: Path) -> Path:
    """A run's folder whose diff is the fixture's solution."""
    fixture = load_fixture(FIXTURE, ROOT)
    workdir, run_dir = folder / "repo", folder / "run"
    base = make_work_copy(fixture, workdir)
    shutil.copytree(fixture.solution_dir, workdir, dirs_exist_ok=True)
    run_dir.mkdir()
    (run_dir / "diff.patch").write_text(capture_diff(workdir, base, fixture))
    (run_dir / "run.json").write_text(json.dumps({"fixture": FIXTURE}))
    return run_dir


def score_once(run_dir: Path, grader: Grader) -> None:
    score = score_run_dir(run_dir, grader, checkout=ROOT)
    if score.hidden_passed != score.hidden_total:
        raise RuntimeError(f"the solution scored {score.hidden_passed} of {score.hidden_total}: {score.error}")


def figures(quick: bool) -> list[Figure]:
    repeats = 1 if quick else 5
    graders: list[tuple[str, Grader, str]] = [("local", LocalGrader(), "<= 5.0")]
    out = []
    if not quick:  # one grading, the local one, in quick mode: it only proves the figure still runs
        try:
            client = docker_client()
            graders.append(("docker", DockerGrader(client, ensure_sandbox_image(client, ROOT)), "<= 10.0"))
        except PrerequisiteError as e:  # the local grader's figure still stands
            out.append(not_measured("scoring time per run, docker grader", str(e)))
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        run_dir = run_folder(Path(tmp))
        for name, grader, target in graders:
            if not quick:
                score_once(run_dir, grader)  # warm
            samples = timed(lambda g=grader: score_once(run_dir, g), repeats)  # type: ignore[misc]
            out.append(figure(f"scoring time per run, {name} grader", "s", samples, target, quick))
    return out
