"""`python -m bench score`: grade a run folder again, or any folder against a fixture's hidden tests.

    python -m bench score results/runs/<run_id>                     run.json names the fixture, diff.patch the work
    python -m bench score --fixture NAME --repo DIR [--out DIR]     DIR is the repository as the agent would leave it

Either way grading is the bench's own (bench.score.grading): a fresh copy, the diff applied, planted files removed,
the hidden tests with their canaries and witness. It prints the counts, whether grading was tampered with and where
the junit XML is; `--json` prints one JSON object instead.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench.errors import ConfigError
from bench.fixtures.fixture import fixtures_root, load_fixture
from bench.fixtures.workcopy import folder_diff
from bench.provenance import tracked_by_git
from bench.score.graders import Grader, make_grader
from bench.score.grading import Score, save_score, score_diff, score_run_dir


def score_folder(fixture: str, repo: Path, grader: Grader, root: Path, out: Path) -> tuple[Score, list[Path]]:
    """Grade folder `repo` as if an agent had left it so; junit XML and score.json go to `out`."""
    fx = load_fixture(fixture, root)
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        diff = folder_diff(fx, repo.absolute(), Path(tmp) / "repo")
        score = score_diff(fx, diff, grader, Path(tmp))
    return score, save_score(score, out)


def default_out(name: str, checkout: Path) -> Path:
    """A new folder in `checkout`'s results/scores/, named by the time and `name`."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return checkout / "results" / "scores" / f"{stamp}-{name}"


def run_dir_out(run_dir: Path, checkout: Path) -> Path | None:
    """Where a run folder's new grading goes: into the folder, unless git tracks it (the shipped example's runs),
    whose files a grading must leave as they are: then `checkout`'s results/scores/, said in one line."""
    if not tracked_by_git(run_dir):
        return None
    out = default_out(run_dir.resolve().name, checkout)
    print(
        f"bench score: {run_dir} is tracked by git, so its files stay as they are: the grading goes to {out}",
        file=sys.stderr,
    )
    return out


def _shown(value: int | None) -> str:
    return "?" if value is None else str(value)


def as_json(score: Score, junit: list[Path]) -> dict[str, object]:
    return {**score.as_json(), "tampered": score.grading_tampered, "junit": [str(path) for path in junit]}


def print_score(score: Score, junit: list[Path]) -> None:
    print(f"fixture        {score.fixture}")
    print(f"hidden tests   {_shown(score.hidden_passed)} of {score.hidden_total} passed")
    print(f"visible tests  {_shown(score.visible_passed)} of {_shown(score.visible_total)} passed")
    touched = ", ".join(score.changed_paths) or "nothing"
    print(f"files changed  {_shown(score.files_changed)} non-test; the diff touches {touched}")
    print(f"tests added    {_shown(score.tests_added)}")
    print(f"unsealed       {_shown(score.hidden_unsealed)} hidden tests graded by plain pytest alone")
    print(f"tampered       {'yes: the tests it cannot vouch for count as failed' if score.grading_tampered else 'no'}")
    print(f"junit          {', '.join(map(str, junit)) or 'none written'}")
    print(f"error          {score.error or 'none'}")


@dataclass(frozen=True)
class ScoreOptions:
    """`bench score`'s options (bench/cli/score.py): a run folder, or a fixture and a folder."""

    sandbox: str  # where grading runs: docker | podman | local
    run_dir: Path | None = None
    fixture: str | None = None
    repo: Path | None = None
    out: Path | None = None  # where junit.xml and score.json go (a run folder's own, by default)
    json: bool = False
    fixtures_root: str = ""


def command(options: ScoreOptions, checkout: Path) -> int:
    """Grade and print; 0 when graded (a tampered or failing score included), 2 on bad arguments. `checkout`: this
    repository (the sandbox image a container grader runs)."""
    root = fixtures_root(options.fixtures_root, checkout) if options.fixtures_root else None
    fixture, repo = options.fixture, options.repo
    if options.run_dir and (fixture or repo):
        raise ConfigError("bench score: give a run folder, or --fixture NAME --repo DIR, not both")
    grader = make_grader(options.sandbox, checkout)
    if options.run_dir:
        out = options.out or run_dir_out(options.run_dir, checkout)
        score = score_run_dir(options.run_dir, grader, checkout=checkout, root=root, out=out)
        junit = [(out or options.run_dir) / name for name in score.junit_reports]
    elif fixture and repo:
        out = options.out or default_out(fixture, checkout)
        score, junit = score_folder(fixture=fixture, repo=repo, grader=grader, root=root or checkout, out=out)
    else:
        raise ConfigError("bench score: give a run folder (results/runs/<run_id>), or --fixture NAME --repo DIR")
    if options.json:
        print(json.dumps(as_json(score, junit), indent=1))
    else:
        print_score(score, junit)
    return 0
