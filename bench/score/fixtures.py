"""Fixtures: loading and validating fixture.yaml, and hashing a fixture's inputs.

A fixture is `fixtures/<name>/` (the repository the agent receives, plus fixture.yaml) and `hidden_tests/<name>/`
(hidden tests at the top, the reference solution under solution/). docs/fixtures.md is the user-facing account.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.errors import FixtureError
from bench.yaml_file import read_mapping

FIXTURE_FILE = "fixture.yaml"
SOLUTION_DIR = "solution"


# key -> (type, required); bool is excluded from int by _check_type.
SCHEMA: dict[str, tuple[type, bool]] = {
    "task_file": (str, True),
    "hidden_tests": (str, True),
    "hidden_total": (int, True),
    "expected_hidden_passing": (int, True),
    "max_steps": (int, True),
    "visible_tests": (list, True),
    "description": (str, False),
    "grading": (str, False),
}
# How the hidden tests meet the code (docs/fixtures.md): they import it (library), or run it as a program in child
# processes and import nothing of the repository (program), which lets grading keep the agent's code out of pytest.
GRADING_KINDS = ("library", "program")


@dataclass(frozen=True)
class Fixture:
    name: str
    path: Path  # fixtures/<name>
    task_file: Path  # relative to the repository copy
    hidden_dir: Path  # hidden_tests/<name>
    hidden_total: int
    expected_hidden_passing: int
    max_steps: int
    visible_tests: list[str]
    description: str = ""
    grading: str = "library"

    @property
    def hidden_test_files(self) -> list[Path]:
        return sorted(self.hidden_dir.glob("test_*.py"))

    @property
    def solution_dir(self) -> Path:
        return self.hidden_dir / SOLUTION_DIR


def repo_root() -> Path:
    return ROOT


def list_fixtures(root: Path | None = None) -> list[str]:
    fixtures_dir = (root or repo_root()) / "fixtures"
    if not fixtures_dir.is_dir():
        return []
    return sorted(p.name for p in fixtures_dir.iterdir() if (p / FIXTURE_FILE).is_file())


def load_fixture(name: str, root: Path | None = None) -> Fixture:
    root = root or repo_root()
    path = root / "fixtures" / name
    if not (path / FIXTURE_FILE).is_file():
        available = ", ".join(list_fixtures(root)) or "none"
        raise FixtureError(f"unknown fixture {name!r}: no fixtures/{name}/{FIXTURE_FILE} (available: {available})")
    data = read_mapping(path / FIXTURE_FILE, f"fixture {name}'s {FIXTURE_FILE}", FixtureError)
    _check_schema(name, data)
    fx = Fixture(
        name=name,
        path=path,
        task_file=Path(data["task_file"]),
        hidden_dir=root / data["hidden_tests"],
        hidden_total=data["hidden_total"],
        expected_hidden_passing=data["expected_hidden_passing"],
        max_steps=data["max_steps"],
        visible_tests=list(data["visible_tests"]),
        description=data.get("description", ""),
        grading=data.get("grading", "library"),
    )
    _check_files(fx, root)
    return fx


def _check_type(value: object, kind: type) -> bool:
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _check_schema(name: str, data: dict[str, Any]) -> None:
    def fail(problem: str) -> FixtureError:
        return FixtureError(f"fixture {name}: {FIXTURE_FILE}: {problem}")

    unknown = sorted(set(data) - set(SCHEMA))
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(SCHEMA)}")
    for key, (kind, required) in SCHEMA.items():
        if key not in data:
            if required:
                raise fail(f"missing key {key!r}")
        elif not _check_type(data[key], kind):
            raise fail(f"{key} must be a {kind.__name__}, got {type(data[key]).__name__} {data[key]!r}")
    if not data["visible_tests"] or not all(isinstance(t, str) for t in data["visible_tests"]):
        raise fail("visible_tests must be a non-empty list of file names")
    if data["hidden_total"] < 1 or data["max_steps"] < 1:
        raise fail("hidden_total and max_steps must be at least 1")
    if not 0 <= data["expected_hidden_passing"] <= data["hidden_total"]:
        raise fail("expected_hidden_passing must be between 0 and hidden_total")
    if data.get("grading", "library") not in GRADING_KINDS:
        raise fail(f"grading must be one of {', '.join(GRADING_KINDS)}, got {data['grading']!r}")


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _check_files(fx: Fixture, root: Path) -> None:
    def fail(problem: str) -> FixtureError:
        return FixtureError(f"fixture {fx.name}: {problem}")

    for rel in [str(fx.task_file), *fx.visible_tests]:
        file = fx.path / rel
        if Path(rel).is_absolute() or not _inside(file, fx.path) or not file.is_file():
            raise fail(f"{rel} is not a file inside fixtures/{fx.name}/")
    if not _inside(fx.hidden_dir, root) or not fx.hidden_dir.is_dir():
        raise fail(f"hidden_tests folder {fx.hidden_dir} does not exist inside the repository")
    if not fx.hidden_test_files:
        raise fail(f"no test_*.py files at the top of {fx.hidden_dir}")


def _is_cache(rel: Path) -> bool:
    return any(part in CACHE_NAMES for part in rel.parts) or rel.suffix in CACHE_SUFFIXES


def fixture_files(fx: Fixture) -> list[Path]:
    """The repository files the agent receives, relative to the fixture folder: everything but fixture.yaml."""
    files = (p.relative_to(fx.path) for p in fx.path.rglob("*") if p.is_file() or p.is_symlink())
    return sorted(rel for rel in files if rel != Path(FIXTURE_FILE) and not _is_cache(rel))


def fixture_hash(fx: Fixture) -> str:
    """A short digest of everything that decides a run's grade: fixture files, fixture.yaml, hidden tests, solution."""
    digest = hashlib.sha256()
    for label, folder in (("fixture", fx.path), ("hidden", fx.hidden_dir)):
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = file.relative_to(folder)
            if _is_cache(rel):
                continue
            digest.update(f"{label}/{rel.as_posix()}\0".encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:16]


# Never part of a fixture's inputs nor of an agent's diff: they are by-products of running Python and pytest.
CACHE_NAMES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


CACHE_SUFFIXES = (".pyc", ".pyo")
