"""The pytest sessions one grading runs, and what each session's report is worth.

Every session is judged (bench/score/graders.py): its tests, with the bench's canaries and the hidden tests' support
files beside them, lie in a folder of their own beside the repository copy, which is the tests' current folder. A
library-style fixture (its hidden tests import the code) is graded in one session, hidden and visible tests
together, with mutant canaries among them (bench/score/canaries.py); the tests meet the repository's modules as
stand-ins whose code runs in a process of its own (bench/score/standin.py). A program-style fixture (`grading:
program` in fixture.yaml: its hidden tests run the program in child processes and import nothing of the repository)
gets two: the hidden tests, with the repository on no path at all and their files deleted once imported (so the
program they run cannot read them); then the visible tests as for a library. Each session has the canary file and
the witness; bench.score.tamper says when a session's report cannot be trusted.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from bench.fixtures.fixture import Fixture
from bench.score.canaries import add_mutants
from bench.score.graders import PytestRun, Session
from bench.score.junit import parse_junit
from bench.score.tamper import GRADING_NAMES, Canaries, canary_name, read_witness, resolution_problem, tampering

GRADING_DIR = ".bench-grading"  # ours, recreated after the diff is applied, so the agent cannot pre-fill it
INI_FILE = f"{GRADING_DIR}/pytest.ini"  # a plain session's (bench.score.check runs a solution's own tests so)
JUNIT_FILE = f"{GRADING_DIR}/junit.xml"
INI_TEXT = "[pytest]\n"  # an ini of ours, so none of the copy's is read; it sets nothing
# --import-mode=append: a test file's folder goes last on sys.path, so nothing in the copy shadows the standard
# library or pytest itself (a getpass.py, a pdb.py at the root are never imported).
BASE_ARGS = ["-c", INI_FILE, "-p", "no:cacheprovider", "--noconftest", "--import-mode=append"]
PLUGIN_PACKAGE = "bench_grading"  # the bench's modules in a judged session, as a package of the plugin folder
WITNESS_MODULE = f"{PLUGIN_PACKAGE}.witness"
PLUGIN_MODULES = {
    "witness": "witness_plugin",
    "landlock": "landlock",
    "crossing": "crossing",
    "proxies": "proxies",
    "handles": "handles",
    "standin": "standin",
    "subject": "subject",
}
# The witness is handed to pytest.main as a plugin object by the session's start-up (bench/score/supervisor.py).
JUDGED_ARGS = [
    "-p",
    "no:cacheprovider",
    "--noconftest",
    "--import-mode=append",
    "--continue-on-collection-errors",
    "-q",
]


def plugin_files() -> dict[str, str]:
    """The plugin folder of a judged session: pytest's ini of ours, and the bench's modules as one package."""
    here = Path(__file__).parent  # this package: in a wheel as in a checkout
    files = {
        f"{PLUGIN_PACKAGE}/{name}.py": (here / f"{source}.py").read_text() for name, source in PLUGIN_MODULES.items()
    }
    return {"pytest.ini": INI_TEXT, f"{PLUGIN_PACKAGE}/__init__.py": "", **files}


@dataclass(frozen=True)
class Planned:
    """One session as planned: which test files it holds (as test ids name them), its canaries, the grader's part,
    its style (program, library: the sealed judge, open: plain pytest's verdict) and the name its report is kept as."""

    hidden: list[str]
    visible: list[str]
    canaries: Canaries
    session: Session
    style: str = "library"
    report: str = "junit.xml"

    @property
    def program_style(self) -> bool:
        return self.style == "program"

    @property
    def files(self) -> list[str]:
        return [*self.hidden, *self.visible, self.canaries.file]


@dataclass(frozen=True)
class Judged:
    """What one session's report is worth. When it cannot be read whole (`void`: a timeout, no junit XML, a killed
    pytest) the outcomes are the tests the witness saw pass; when it cannot be trusted (`tampered`), none."""

    outcomes: dict[str, str]  # test id -> outcome, the bench's canaries left out
    tampered: str | None = None  # why the report cannot be trusted: no test of it counts as passed
    void: str | None = None  # why there is no whole report: the tests it did not report count as failed
    notes: tuple[str, ...] = ()  # how the session ran, when the score should say so (bench.score.tamper.Witness)
    refused: frozenset[str] = frozenset()  # the sealed judge's tests that handed the code what cannot cross
    decided: frozenset[str] = frozenset()  # the sealed judge's tests in which the code answered a verdict's operation
    confinement: str | None = None  # what confined the sealed judge's code process (bench.score.tamper.Witness)


def _taken_names(copy: Path, sources: list[str]) -> set[str]:
    """Names a canary must not take: the copy's top-level entries and every word of the tests."""
    taken = {path.name for path in copy.iterdir()} | {path.stem for path in copy.iterdir()}
    return taken | {word for text in sources for word in re.findall(r"\w+", text)}


def _session(
    fx: Fixture, copy: Path, tests: tuple[dict[str, str], list[str]], style: str, support: dict[str, str], report: str
) -> Planned:
    """A judged session of `tests`, hidden (path -> text) and visible (paths), with the hidden tests' `support` files
    beside them (and in the repository copy too, where the fixture has them: the code may import those)."""
    hidden, visible = tests
    texts = {**hidden, **{name: (fx.path / name).read_text() for name in visible}}
    taken = _taken_names(copy, list(texts.values()))
    canaries = Canaries(file=_unused(f"{canary_name()}.py", taken))
    files = dict(support)
    for name, text in texts.items():
        if style != "program":
            text, ids = add_mutants(text, taken)
            canaries.mutants[name] = ids
        files[name] = text
    files[canaries.file] = canaries.file_text()
    originals = {rel: text for rel, text in support.items() if (fx.path / rel).is_file()}
    run = [*hidden, *visible, canaries.file]
    session = Session(
        list(JUDGED_ARGS), originals, style=style, tests=files, run=run, plugins=plugin_files(), hide=style == "program"
    )
    return Planned(list(hidden), visible, canaries, session, style=style, report=report)


def _unused(name: str, taken: set[str]) -> str:
    while name in taken or name.removesuffix(".py") in taken:
        name = f"{canary_name()}.py"
    taken.add(name.removesuffix(".py"))
    return name


def plan_sessions(fx: Fixture, copy: Path) -> list[Planned]:
    """The sessions that grade `copy` (the agent's work, cleaned) against fixture `fx`. Tests that import the code
    are run twice: by the sealed judge first (the code in a process of its own), then by plain pytest (the code in
    the tests' process), whose outcomes are the verdict where the sealed judge confirms them (bench/score/verdict.py);
    the sealed one runs first, so nothing the code leaves behind in the open session reaches it."""
    hidden = {rel: (fx.hidden_dir / rel).read_text() for rel in fx.hidden_tests}
    support = {rel: (fx.hidden_dir / rel).read_text() for rel in fx.support_files}
    if fx.grading == "program":
        tests: tuple[dict[str, str], list[str]] = ({}, fx.visible_tests)
        first = [_session(fx=fx, copy=copy, tests=(hidden, []), style="program", support=support, report="junit.xml")]
        names = ("junit-visible-sealed.xml", "junit-visible.xml")
    else:
        tests, first, names = (hidden, fx.visible_tests), [], ("junit-sealed.xml", "junit.xml")
    return [
        *first,
        _session(fx=fx, copy=copy, tests=tests, style="library", support=support, report=names[0]),
        _session(fx=fx, copy=copy, tests=tests, style="open", support=support, report=names[1]),
    ]


def shadowing(copy: Path) -> tuple[str | None, list[str]]:
    """Module names at the root of the copy that would not resolve as a reader expects: a package beside a module
    of the same name (Python takes the package: tampering), and names of the standard library or pytest (noted:
    grading's imports by those names get the real modules, but a program run from the copy may import them)."""
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
    """The outcomes of one session's report; why it is not whole, or why it cannot be trusted."""
    witness = read_witness(run.witness, run.witness_problem)
    canary_ids = set(planned.canaries.expected())
    refused = frozenset(witness.refused()) - canary_ids
    decided = frozenset(witness.decided()) - canary_ids
    void = None
    if run.timed_out:
        void = f"timed out after {timeout_s:g}s"
    elif run.junit_xml is None:
        why = f" ({run.unread})" if run.unread else ""
        void = f"wrote no junit XML{why}: {run.output.strip()[-300:]}"
    else:
        try:
            outcomes = parse_junit(run.junit_xml, planned.files)
        except ElementTree.ParseError as e:
            void = f"wrote junit XML that does not parse ({e})"
    if void:
        seen = {test_id: "passed" for test_id in witness.passed() if test_id not in canary_ids}
        why = f"grading pytest {void}; the tests it did not report count as failed"
        confinement = witness.confinement()
        notes = tuple(witness.notes())
        return Judged(seen, void=why, notes=notes, refused=refused, decided=decided, confinement=confinement)
    resolution = resolution_problem(witness.modules, planned.program_style, (f"{GRADING_DIR}/",))
    tampered = tampering(
        outcomes=outcomes, canaries=planned.canaries, witness=witness, exit_code=run.exit_code, resolution=resolution
    )
    if tampered:
        return Judged({}, tampered=tampered, refused=refused, confinement=witness.confinement())
    kept = {test_id: o for test_id, o in outcomes.items() if test_id not in canary_ids}
    notes = tuple(witness.notes())
    return Judged(kept, notes=notes, refused=refused, decided=decided, confinement=witness.confinement())
