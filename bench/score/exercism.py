"""`python -m bench fixtures import exercism SRC... --into DIR`: exercism exercises (the layout of Aider's polyglot
benchmark) written as fixtures of this suite, under a fixtures root of the user's (docs/fixtures.md).

An exercise is a folder with `.meta/config.json` naming its solution (stub), test and example files, and
`.docs/instructions.md` (plus `instructions.append.md`), read and checked by bench/score/exercise.py. Per exercise it
writes `fixtures/<name>/` (the stub, the editor files, TASK.md from the instructions naming the files to change, the
visible share of the tests, read-only) and `hidden_tests/<name>/` (every test, the test files' helpers beside them,
the example as solution/), then grades the stub and the example the bench's way to fill in fixture.yaml's counts, in
the grader the bench would use: their code is a stranger's, so it runs in a container, or on this machine only when
asked (`--sandbox local`). An exercise it cannot take is reported with the reason in one short line; the others
still import.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.errors import FixtureError, PrerequisiteError, SandboxError
from bench.fixtures.fixture import FIXTURE_FILE, SOLUTION_DIR, load_fixture
from bench.fixtures.workcopy import solution_diff
from bench.languages.kinds import language
from bench.score.exercise import DOCS, Exercise, exercises_in, read_exercise
from bench.score.graders import Grader, choose_grader
from bench.score.grading import score_diff
from bench.score.junit import count
from bench.score.visible_share import visible_share

__all__ = ["command", "import_all", "read_exercise", "visible_share"]
VISIBLE_SUFFIX = "_visible_test.py"  # the agent's read-only share of `x_test.py` is `x_visible_test.py`
IGNORED = {  # the fixture's .gitignore
    "python": b"__pycache__/\n.pytest_cache/\n",
    "rust": b"target/\n",
    "javascript": b"node_modules/\n",
    "java": b"build/\n.gradle/\n",
}


@dataclass
class Imported:
    name: str
    files: list[str]  # the agent's repository, relative to fixtures/<name>
    hidden: list[str]  # relative to hidden_tests/<name>
    hidden_total: int = 0
    expected_hidden_passing: int = 0
    visible_total: int = 0
    expected_visible_passing: int | None = None
    solution_passing: int = 0

    def line(self) -> str:
        visible = f"{self.visible_total} visible ({self.expected_visible_passing} pass on the stub)"
        return (
            f"{self.name}: imported: {len(self.files)} files ({', '.join(self.files)}); {self.hidden_total} hidden "
            f"tests, {self.expected_hidden_passing} pass on the stub, {self.solution_passing} on the example; "
            f"{visible if self.visible_total else 'no visible tests'}"
        )


def task_text(ex: Exercise, visible: list[str]) -> str:
    docs = ex.folder / ".docs"
    parts = [(docs / name).read_text().strip() for name in DOCS if (docs / name).is_file()]
    change = ", ".join(f"`{rel}`" for rel in ex.solution)
    footer = [f"Make your changes in {change}: that is where the tests look for your code."]
    if ex.editor:
        footer.append(f"{', '.join(f'`{rel}`' for rel in ex.editor)} must stay as it is.")
    if ex.language != "python":
        command = language(ex.language).test_command
        footer.append(
            f"The tests that check your work are hidden: read the instructions closely. `{command}` builds and runs "
            "the tests there are; before you finish, add tests of your own beside the code."
        )
    elif visible:
        footer.append(
            f"Some of the tests are in {', '.join(f'`{rel}`' for rel in visible)} (read-only; run them with pytest); "
            "more tests of the same behaviour are hidden."
        )
    else:
        footer.append(
            "The tests that check your work are hidden: read the instructions closely. Before you finish, add tests "
            "of your own (test_*.py): finishing runs pytest, which must find tests and see them pass."
        )  # the agent's done check refuses a repository where pytest collects nothing
    return "\n\n".join([*parts, "## Files", " ".join(footer)]) + "\n"


def write_exercise(ex: Exercise, into: Path, share: float, max_steps: int) -> Imported:
    """The fixture's and the hidden folder's files, with placeholder counts (filled in by `measure`)."""
    fixture, hidden = into / "fixtures" / ex.name, into / "hidden_tests" / ex.name
    visible: dict[str, str] = {}
    for rel in ex.tests if ex.language == "python" else []:  # the share is cut from Python's syntax tree
        text = visible_share((ex.folder / rel).read_text(), share) if share > 0 else None
        if text is not None:
            visible[rel.removesuffix(".py").removesuffix("_test").removeprefix("test_") + VISIBLE_SUFFIX] = text
    given = {rel: (ex.folder / rel).read_bytes() for rel in [*ex.solution, *ex.editor, *ex.build]}
    if visible:  # the visible tests import the helpers too
        given.update({rel: (ex.folder / rel).read_bytes() for rel in ex.helpers})
    given.update({rel: text.encode() for rel, text in visible.items()})
    given["TASK.md"] = task_text(ex, list(visible)).encode()
    given[".gitignore"] = IGNORED.get(ex.language, b"")
    secret = {rel: (ex.folder / rel).read_bytes() for rel in [*ex.tests, *ex.helpers, *ex.editor]}
    secret.update({f"{SOLUTION_DIR}/{sol}": (ex.folder / example).read_bytes() for sol, example in ex.examples.items()})
    for folder, files in ((fixture, given), (hidden, secret)):
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
    meta: dict[str, Any] = {
        "description": ex.blurb or f"exercism exercise {ex.folder.name}",
        "task_file": "TASK.md",
        "hidden_tests": f"hidden_tests/{ex.name}",
        "hidden_total": 1,
        "expected_hidden_passing": 0,
        "max_steps": max_steps,
        "visible_tests": sorted(visible),
        "grading": "library",
        "solution_adds_tests": False,
    }
    if ex.language != "python":
        meta["language"] = ex.language
    (fixture / FIXTURE_FILE).write_text(f"# Imported from exercism exercise {ex.folder.name}.\n" + yaml.safe_dump(meta))
    return Imported(ex.name, sorted(given), sorted(secret))


def measure(imported: Imported, into: Path, grader: Grader) -> None:
    """Grade the stub and the example the bench's way, and write the counts they give into fixture.yaml."""
    fx = load_fixture(imported.name, into)
    with tempfile.TemporaryDirectory(prefix=f"bench-import-{fx.name}-") as tmp:
        stub = score_diff(fx, "", grader, Path(tmp) / "stub")
        example = score_diff(fx, solution_diff(fx, Path(tmp) / "solution"), grader, Path(tmp) / "graded")
    _, total, broken = count(example.outcomes, fx.hidden_tests)
    if broken or not total:
        first = f"{broken[0]} does not collect" if broken else example.error or "no test collected"
        raise FixtureError(f"its tests do not run on the example ({first})")
    if stub.grading_tampered:
        raise FixtureError(f"the stub's grading was flagged: {(stub.error or '')[:200]}")
    stub_passing, _, _ = count(stub.outcomes, fx.hidden_tests)
    solved, _, _ = count(example.outcomes, fx.hidden_tests)
    if solved != total or example.grading_tampered:
        failing = sorted(test for test, outcome in example.outcomes.items() if outcome != "passed")
        first = f"first failing: {failing[0]}" if failing else "its grading was flagged"
        raise FixtureError(f"the example passes {solved} of its {total} tests ({first})")
    imported.hidden_total, imported.expected_hidden_passing, imported.solution_passing = total, stub_passing, solved
    file = fx.path / FIXTURE_FILE
    head, _, _ = file.read_text().partition("\n")
    meta = yaml.safe_load(file.read_text())
    meta.update(hidden_total=total, expected_hidden_passing=stub_passing)
    if fx.visible_tests:
        imported.visible_total = stub.visible_total or 0
        imported.expected_visible_passing = stub.visible_passed
        meta["expected_visible_passing"] = stub.visible_passed
    file.write_text(f"{head}\n{yaml.safe_dump(meta)}")


def import_exercise(folder: Path, into: Path, share: float, max_steps: int, force: bool, grader: Grader) -> Imported:
    ex = read_exercise(folder)
    targets = [into / "fixtures" / ex.name, into / "hidden_tests" / ex.name]
    if any(t.exists() for t in targets) and not force:
        raise FixtureError(f"{targets[0]} already exists (--force replaces it)")
    for target in targets:
        shutil.rmtree(target, ignore_errors=True)
    try:
        imported = write_exercise(ex, into, share, max_steps)
        measure(imported, into, grader)
    except Exception:
        for target in targets:  # no half-made fixture is left to be run
            shutil.rmtree(target, ignore_errors=True)
        raise
    return imported


Refused = dict[str, str]  # exercise folder name -> why it was not imported
EXERCISE_ERRORS = (FixtureError, OSError, SyntaxError, UnicodeDecodeError)  # what an exercise of its own can cause


def _engine_failure(error: Exception) -> str:
    """What to say when grading failed because the container engine did (its socket gone mid-import, its API
    refusing), not because of the exercise; "" for any other error."""
    import docker.errors
    import requests.exceptions

    if not isinstance(error, (SandboxError, docker.errors.DockerException, requests.exceptions.ConnectionError)):
        return ""
    return f"the container engine failed ({' '.join(str(error).split())[:120]}): import it again once it answers"


def import_all(
    sources: list[Path], into: Path, share: float, max_steps: int, force: bool, *, grader: Grader
) -> tuple[list[Imported], Refused]:
    """Every exercise of `sources` imported under `into`, graded by `grader`; those it could not take, with the
    reason."""
    imported: list[Imported] = []
    refused: Refused = {}
    engine_failed = ""  # once the container engine fails, the exercises left are not tried: none of them is at fault
    for folder in [f for source in sources for f in exercises_in(source)]:
        if engine_failed:
            refused[folder.name] = f"not tried: {engine_failed}"
            continue
        try:
            imported.append(
                import_exercise(folder=folder, into=into, share=share, max_steps=max_steps, force=force, grader=grader)
            )
        except Exception as e:
            if not (engine_failed := _engine_failure(e)) and not isinstance(e, EXERCISE_ERRORS):
                raise
            refused[folder.name] = f"not graded: {engine_failed}" if engine_failed else str(e)
    return imported, refused


def import_grader(requested: str, checkout: Path) -> Grader:
    """The grader the bench would use; this machine's own only when asked for (the exercises' code is a stranger's).
    Says which."""
    grader, kind, why = choose_grader(requested, checkout)
    if kind == "local" and requested != "local":
        raise PrerequisiteError(
            f"no sandbox to grade the exercises' stubs and examples in ({why}): start Docker or podman, or give "
            "--sandbox local to run their code on this machine"
        )
    where = "on this machine (--sandbox local): the exercises' code runs as you" if kind == "local" else f"in {kind}"
    print(f"grading the stubs and examples {where}" + ("" if kind == "local" else f" ({why})"), flush=True)
    return grader


def command(
    sources: list[Path],
    into: Path,
    visible: float = 0.0,
    max_steps: int = 30,
    force: bool = False,
    sandbox: str = "auto",
    *,
    checkout: Path,
) -> int:
    """One line per exercise; 0 when at least one imported and none was refused, 1 otherwise (`checkout`: this
    repository, whose sandbox image grades the stubs and examples)."""
    if not 0 <= visible <= 1:
        raise FixtureError(f"--visible {visible}: a share from 0 (every test hidden) to 1")
    into = into.expanduser().absolute()
    grader = import_grader(sandbox, checkout)
    (into / "fixtures").mkdir(parents=True, exist_ok=True)
    (into / "hidden_tests").mkdir(parents=True, exist_ok=True)
    imported, refused = import_all(
        sources=sources, into=into, share=visible, max_steps=max_steps, force=force, grader=grader
    )
    for done in imported:
        print(done.line(), flush=True)
    for name, why in refused.items():
        print(f"{name}: not imported: {' '.join(why.split())[:300]}", flush=True)
    print(f"{len(imported)} imported, {len(refused)} not, into {into} (fixtures_root: {into})")
    return 0 if imported and not refused else 1
