"""What a grading found: the counts a results row takes, each test's outcome, and what was noted on the way."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from bench.results.row import ResultRow


@dataclass
class Score:
    fixture: str
    hidden_total: int
    hidden_passed: int | None = None
    visible_passed: int | None = None
    visible_total: int | None = None
    files_changed: int | None = None  # non-test files the diff adds, changes or deletes
    changed_paths: list[str] = field(default_factory=list)  # every path in the diff
    tests_added: int | None = None  # new test functions, parametrized cases counted once
    visible_tests_modified: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed / failed / error / skipped
    error: str | None = None
    hidden_unsealed: int | None = None  # hidden tests graded by plain pytest alone (bench/score/verdict.py)
    code_decided: list[str] = field(default_factory=list)  # hidden tests whose verdict the code's answer gave
    grading_confinement: str = ""  # what confined the sealed judge's code process (bench.score.tamper.Witness)
    grading_tampered: bool = False  # the grading was interfered with: tests it cannot vouch for count as failed
    voided: bool = False  # a session gave no whole report (killed, timed out, no junit XML): bench.run.grade asks why
    junit_reports: dict[str, str] = field(default_factory=dict, repr=False)  # file name -> a session's junit XML
    notes: list[str] = field(default_factory=list, repr=False)  # each problem `error` joins
    # The notes of test files that did not collect: what a task's stub gives when it lacks names its tests import.
    collection_notes: list[str] = field(default_factory=list, repr=False)

    def note(self, problem: str, collection: bool = False) -> None:
        self.notes.append(problem)
        if collection:
            self.collection_notes.append(problem)
        self.error = f"{self.error}; {problem}" if self.error else problem

    def error_but_collection(self) -> str | None:
        """`error` without the notes of test files that did not collect."""
        return "; ".join(note for note in self.notes if note not in self.collection_notes) or None

    def fill(self, row: ResultRow) -> None:
        row.hidden_passed, row.hidden_total = self.hidden_passed, self.hidden_total
        row.visible_passed, row.visible_total = self.visible_passed, self.visible_total
        row.hidden_unsealed, row.grading_confinement = self.hidden_unsealed, self.grading_confinement
        row.files_changed, row.tests_added = self.files_changed, self.tests_added
        row.visible_tests_modified = list(self.visible_tests_modified)

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        for internal in ("junit_reports", "notes", "collection_notes"):
            data.pop(internal)
        return data
