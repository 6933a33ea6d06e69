"""`python -m bench fixtures import exercism SRC... --into DIR`: exercism exercises (the layout of Aider's polyglot
benchmark) written as fixtures of this suite, under a fixtures root of the user's (docs/fixtures.md).

An exercise is a folder with `.meta/config.json` naming its solution (stub), test and example files, and
`.docs/instructions.md` (plus `instructions.append.md`). Per exercise it writes `fixtures/<name>/` (the stub, the
editor files, TASK.md from the instructions naming the files to change, the visible share of the tests, read-only)
and `hidden_tests/<name>/` (every test, the test files' helpers beside them, the example as solution/), then grades
the stub and the example the bench's way to fill in fixture.yaml's counts, in the grader the bench would use: their
code is a stranger's, so it runs in a container, or on this machine only when asked (`--sandbox local`). An exercise
it cannot take (a config naming files outside the exercise among the reasons) is reported with the reason; the
others still import.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.errors import FixtureError, PrerequisiteError
from bench.fixtures.fixture import FIXTURE_FILE, SOLUTION_DIR, is_hidden_test, load_fixture
from bench.fixtures.workcopy import solution_diff
from bench.score.graders import Grader, choose_grader
from bench.score.grading import score_diff
from bench.score.junit import count
from bench.score.visible_share import visible_share

__all__ = ["command", "import_all", "read_exercise", "visible_share"]
CONFIG = Path(".meta/config.json")
VISIBLE_SUFFIX = "_visible_test.py"  # the agent's read-only share of `x_test.py` is `x_visible_test.py`


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


@dataclass
class Exercise:
    folder: Path
    solution: list[str]
    tests: list[str]  # test files (test_*.py, *_test.py)
    helpers: list[str]  # the config's other test files: modules the tests import
    editor: list[str]  # read-only files the stub and the tests share
    examples: dict[str, str] = field(default_factory=dict)  # solution file -> example file
    blurb: str = ""

    @property
    def name(self) -> str:
        return self.folder.name.replace("-", "_")


def exercises_in(source: Path) -> list[Path]:
    """An exercise folder, or the exercise folders inside `source` (a track's exercises/practice/)."""
    if (source / CONFIG).is_file():
        return [source]
    if not source.is_dir():
        raise FixtureError(f"{source} is not a folder")
    found = sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not found:
        raise FixtureError(f"{source}: no exercise folders in it (each has {CONFIG})")
    return found


def read_exercise(folder: Path) -> Exercise:
    """The exercise's files from its config; FixtureError naming why it cannot be a fixture."""
    try:
        files = json.loads((folder / CONFIG).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise FixtureError(f"no readable {CONFIG} with a files table ({type(e).__name__}: {e})") from e

    def listed(key: str) -> list[str]:
        value = files.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FixtureError(f"{CONFIG}: files.{key} is not a list of paths")
        return value

    solution, tests, examples, editor = listed("solution"), listed("test"), listed("example"), listed("editor")
    named = [*solution, *tests, *examples, *editor]
    outside = [rel for rel in named if Path(rel).is_absolute() or not _inside(folder, rel)]
    if outside:
        raise FixtureError(f"{CONFIG} names {', '.join(outside)}, outside the exercise")
    foreign = [rel for rel in named if not rel.endswith(".py")]
    if foreign:
        raise FixtureError(f"not a Python exercise (files {', '.join(foreign)})")
    if not solution or not [t for t in tests if is_hidden_test(t)]:
        raise FixtureError(f"{CONFIG} names no solution file or no test file (test_*.py, *_test.py)")
    missing = [rel for rel in named if not (folder / rel).is_file()]
    if missing:
        raise FixtureError(f"missing {', '.join(missing)} (named in {CONFIG})")
    if not examples:
        raise FixtureError("no example solution (files.example): nothing shows the task can be done")
    if len(examples) != len(solution):
        raise FixtureError(f"{len(examples)} example files for {len(solution)} solution files: cannot pair them")
    if not (folder / ".docs/instructions.md").is_file():
        raise FixtureError("no .docs/instructions.md")
    blurb = json.loads((folder / CONFIG).read_text()).get("blurb", "")
    return Exercise(
        folder=folder,
        solution=solution,
        tests=[t for t in tests if is_hidden_test(t)],
        helpers=[t for t in tests if not is_hidden_test(t)],
        editor=editor,
        examples=dict(zip(solution, examples, strict=True)),
        blurb=blurb if isinstance(blurb, str) else "",
    )


def _inside(folder: Path, rel: str) -> bool:
    """Whether `rel` (links followed) stays within the exercise's folder."""
    try:
        return (folder / rel).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def task_text(ex: Exercise, visible: list[str]) -> str:
    docs = ex.folder / ".docs"
    names = ("introduction.md", "instructions.md", "instructions.append.md")
    parts = [(docs / name).read_text().strip() for name in names if (docs / name).is_file()]
    change = ", ".join(f"`{rel}`" for rel in ex.solution)
    footer = [f"Make your changes in {change}: that is where the tests look for your code."]
    if ex.editor:
        footer.append(f"{', '.join(f'`{rel}`' for rel in ex.editor)} must stay as it is.")
    if visible:
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
    for rel in ex.tests:
        text = visible_share((ex.folder / rel).read_text(), share) if share > 0 else None
        if text is not None:
            visible[rel.removesuffix(".py").removesuffix("_test").removeprefix("test_") + VISIBLE_SUFFIX] = text
    given = {rel: (ex.folder / rel).read_bytes() for rel in [*ex.solution, *ex.editor]}
    if visible:  # the visible tests import the helpers too
        given.update({rel: (ex.folder / rel).read_bytes() for rel in ex.helpers})
    given.update({rel: text.encode() for rel, text in visible.items()})
    given["TASK.md"] = task_text(ex, list(visible)).encode()
    given[".gitignore"] = b"__pycache__/\n.pytest_cache/\n"
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
        raise FixtureError(f"its tests do not run on the example: {example.error or 'no test collected'}")
    stub_passing, _, _ = count(stub.outcomes, fx.hidden_tests)
    solved, _, _ = count(example.outcomes, fx.hidden_tests)
    if solved != total:
        raise FixtureError(f"the example passes {solved} of its {total} tests: {example.error or 'see its tests'}")
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


def import_all(
    sources: list[Path], into: Path, share: float, max_steps: int, force: bool, *, grader: Grader
) -> tuple[list[Imported], Refused]:
    """Every exercise of `sources` imported under `into`, graded by `grader`; those it could not take, with the
    reason."""
    imported: list[Imported] = []
    refused: Refused = {}
    for folder in [f for source in sources for f in exercises_in(source)]:
        try:
            imported.append(
                import_exercise(folder=folder, into=into, share=share, max_steps=max_steps, force=force, grader=grader)
            )
        except (FixtureError, OSError, SyntaxError, UnicodeDecodeError) as e:
            refused[folder.name] = str(e)
    return imported, refused


def import_grader(requested: str) -> Grader:
    """The grader the bench would use; this machine's own only when asked for (the exercises' code is a stranger's).
    Says which."""
    grader, kind, why = choose_grader(requested)
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
) -> int:
    """One line per exercise; 0 when at least one imported and none was refused, 1 otherwise."""
    if not 0 <= visible <= 1:
        raise FixtureError(f"--visible {visible}: a share from 0 (every test hidden) to 1")
    into = into.expanduser().absolute()
    grader = import_grader(sandbox)
    (into / "fixtures").mkdir(parents=True, exist_ok=True)
    (into / "hidden_tests").mkdir(parents=True, exist_ok=True)
    imported, refused = import_all(
        sources=sources, into=into, share=visible, max_steps=max_steps, force=force, grader=grader
    )
    for done in imported:
        print(done.line(), flush=True)
    for name, why in refused.items():
        print(f"{name}: not imported: {why}", flush=True)
    print(f"{len(imported)} imported, {len(refused)} not, into {into} (fixtures_root: {into})")
    return 0 if imported and not refused else 1
