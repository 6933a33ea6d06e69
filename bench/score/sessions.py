"""The pytest sessions one grading runs, and what each session's report is worth.

A library-style fixture (its hidden tests import the code) is graded in one session: hidden and visible tests at
the root of the copy, with mutant canaries among them (bench/score/canaries.py), the copy last on sys.path. A
program-style fixture (`grading: program` in fixture.yaml: its hidden tests run the program in child processes and
import nothing of the repository) gets two: the hidden tests in a folder of the bench's own with the copy off
sys.path entirely, their files deleted once imported (so the program they run cannot read them); then, in a fresh
copy, the visible tests as for a library. Each session has the canary file and the witness; bench.score.tamper
says when a session's report cannot be trusted.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from bench import ROOT
from bench.fixtures.fixture import Fixture
from bench.score.canaries import add_mutants
from bench.score.graders import PytestRun, Session
from bench.score.junit import parse_junit
from bench.score.tamper import GRADING_NAMES, Canaries, canary_name, read_witness, resolution_problem, tampering

GRADING_DIR = ".bench-grading"  # ours, recreated after the diff is applied, so the agent cannot pre-fill it
HIDDEN_DIR = f"{GRADING_DIR}/hidden"  # program-style hidden tests, away from the repository's modules
INI_FILE = f"{GRADING_DIR}/pytest.ini"
JUNIT_FILE = f"{GRADING_DIR}/junit.xml"
INI_TEXT = "[pytest]\n"  # an ini of ours, so none of the copy's is read; it sets nothing
# --import-mode=append: a test file's folder goes last on sys.path, so nothing in the copy shadows the standard
# library or pytest itself (a getpass.py, a pdb.py at the root are never imported).
BASE_ARGS = ["-c", INI_FILE, "-p", "no:cacheprovider", "--noconftest", "--import-mode=append"]
WITNESS_MODULE = "bench_witness"
WITNESS_SOURCE = ROOT / "bench" / "score" / "witness_plugin.py"


@dataclass(frozen=True)
class Planned:
    """One session as planned: which test files it holds (as test ids name them), its canaries, the grader's part."""

    hidden: list[str]
    visible: list[str]
    canaries: Canaries
    session: Session
    program_style: bool = False

    @property
    def files(self) -> list[str]:
        return [*self.hidden, *self.visible, self.canaries.file]


@dataclass(frozen=True)
class Judged:
    outcomes: dict[str, str] | None  # test id -> outcome, the bench's canaries left out; None when not read
    tampered: str | None  # why the report cannot be trusted
    problem: str | None  # why there is no report (a timeout, no junit XML)


def _taken_names(copy: Path, sources: list[str]) -> set[str]:
    """Names a canary must not take: the copy's top-level entries and every word of the tests."""
    taken = {path.name for path in copy.iterdir()} | {path.stem for path in copy.iterdir()}
    return taken | {word for text in sources for word in re.findall(r"\w+", text)}


def _session(
    fx: Fixture, copy: Path, hidden: dict[str, str], visible: list[str], where: str, mutate: bool,
    support: dict[str, str],
) -> Planned:  # fmt: skip
    """A session of `hidden` (path -> text) and `visible` tests, placed in folder `where` ("" for the root), with
    the hidden tests' `support` files beside them (and at the root too, for the visible tests that may use them)."""
    prefix = f"{where}/" if where else ""
    texts = {**hidden, **{name: (fx.path / name).read_text() for name in visible}}
    taken = _taken_names(copy, list(texts.values()))
    canaries = Canaries(file=_unused(f"{canary_name()}.py", taken))
    files = {f"{GRADING_DIR}/{WITNESS_MODULE}.py": WITNESS_SOURCE.read_text()}
    files.update({rel: text for rel, text in support.items() if (fx.path / rel).is_file()})  # the originals
    files.update({prefix + rel: text for rel, text in support.items()})
    for name, text in texts.items():
        if mutate:
            text, ids = add_mutants(text, taken)
            canaries.mutants[name] = ids
        files[prefix + name] = text
    files[prefix + canaries.file] = canaries.file_text()
    tests = [prefix + name for name in [*hidden, *visible, canaries.file]]
    args = [*BASE_ARGS, f"--rootdir={where or '.'}", "-p", WITNESS_MODULE, "--continue-on-collection-errors",
            f"--junitxml={JUNIT_FILE}", "-q", *tests]  # fmt: skip
    session = Session(args, files, repository="" if where else ".", plugins=GRADING_DIR, junit=JUNIT_FILE,
                      hide=where)  # fmt: skip
    return Planned(list(hidden), visible, canaries, session, program_style=bool(where))


def _unused(name: str, taken: set[str]) -> str:
    while name in taken or name.removesuffix(".py") in taken:
        name = f"{canary_name()}.py"
    taken.add(name.removesuffix(".py"))
    return name


def plan_sessions(fx: Fixture, copy: Path) -> list[Planned]:
    """The sessions that grade `copy` (the agent's work, cleaned) against fixture `fx`."""
    hidden = {rel: (fx.hidden_dir / rel).read_text() for rel in fx.hidden_tests}
    support = {rel: (fx.hidden_dir / rel).read_text() for rel in fx.support_files}
    if fx.grading == "program":
        return [
            _session(fx, copy, hidden, [], HIDDEN_DIR, mutate=False, support=support),
            _session(fx, copy, {}, fx.visible_tests, "", mutate=True, support=support),
        ]
    return [_session(fx, copy, hidden, fx.visible_tests, "", mutate=True, support=support)]


def shadowing(copy: Path) -> tuple[str | None, list[str]]:
    """Module names at the root of the copy that would not resolve as a reader expects: a package beside a module
    of the same name (Python takes the package: tampering), and names of the standard library or pytest (never
    imported in grading, where the copy comes last on sys.path: noted)."""
    entries = {path.name for path in copy.iterdir()}
    noted: list[str] = []
    for name in sorted(entries):
        module = name.removesuffix(".py") if name.endswith(".py") else name
        if name == module and not (copy / name / "__init__.py").is_file():
            continue
        if name == module and f"{module}.py" in entries:
            return f"module resolution: the package {module}/ stands in for {module}.py", noted
        if module in sys.stdlib_module_names or module in GRADING_NAMES:
            noted.append(name)
    return None, noted


def judge(planned: Planned, run: PytestRun, timeout_s: float) -> Judged:
    """The outcomes of one session's report, or why it has none, or why it cannot be trusted."""
    if run.timed_out or run.junit_xml is None:
        why = f"timed out after {timeout_s:g}s" if run.timed_out else f"wrote no junit XML: {run.output.strip()[-300:]}"
        return Judged(None, None, f"grading pytest {why}")
    try:
        outcomes = parse_junit(run.junit_xml, planned.files)
    except ElementTree.ParseError as e:
        return Judged(None, f"its junit XML does not parse ({e})", None)
    witness = read_witness(run.witness, run.witness_problem)
    ours = (f"{GRADING_DIR}/",)
    resolution = resolution_problem(witness.modules, planned.program_style, ours)
    tampered = tampering(outcomes, planned.canaries, witness, run.exit_code, resolution)
    if tampered:
        return Judged(None, tampered, None)
    canary_ids = set(planned.canaries.expected())
    return Judged({test_id: o for test_id, o in outcomes.items() if test_id not in canary_ids}, None, None)
