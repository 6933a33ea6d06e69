"""Fixtures: loading and validating fixture.yaml, hashing a fixture's inputs, the agent's git copy, and its diff.

A fixture is `fixtures/<name>/` (the repository the agent receives, plus fixture.yaml) and `hidden_tests/<name>/`
(hidden tests at the top, the reference solution under solution/). docs/fixtures.md is the user-facing account.
`python -m bench fixtures check` (at the bottom) runs bench.fixture_check on each fixture.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import ROOT
from bench.errors import FixtureError

FIXTURE_FILE = "fixture.yaml"
SOLUTION_DIR = "solution"
# Never part of a fixture's inputs nor of an agent's diff: they are by-products of running Python and pytest.
CACHE_NAMES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
CACHE_SUFFIXES = (".pyc", ".pyo")
DIFF_EXCLUDES = [f":(exclude,glob)**/{name}/**" for name in sorted(CACHE_NAMES)]
DIFF_EXCLUDES += [f":(exclude,glob)**/*{suffix}" for suffix in CACHE_SUFFIXES]

# Fixed identity and date for the agent's single commit, so the copy's history says nothing about its origin.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
COMMIT_MESSAGE = "initial state"

# key -> (type, required); bool is excluded from int by _check_type.
SCHEMA: dict[str, tuple[type, bool]] = {
    "task_file": (str, True),
    "hidden_tests": (str, True),
    "hidden_total": (int, True),
    "expected_hidden_passing": (int, True),
    "max_steps": (int, True),
    "visible_tests": (list, True),
    "description": (str, False),
}


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
    data = _read_yaml(name, path / FIXTURE_FILE)
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
    )
    _check_files(fx, root)
    return fx


def _read_yaml(name: str, file: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise FixtureError(f"fixture {name}: {FIXTURE_FILE} is not valid YAML ({e})") from e
    if not isinstance(data, dict):
        raise FixtureError(f"fixture {name}: {FIXTURE_FILE} must be a mapping of keys to values")
    return data


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


def run_git(workdir: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    """Run git in `workdir`, ignoring the user's and system's git configuration; a failure is a FixtureError."""
    # safe.directory: the copy may belong to another uid (the container user) by the time we diff it.
    command = ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args]
    trusted = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_NO_REPLACE_OBJECTS": "1"}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env = {**inherited, **trusted, **(env or {})}
    # surrogateescape: file contents in a diff need not be UTF-8, and must survive the round trip unchanged.
    done = subprocess.run(
        command, cwd=workdir, env=full_env, input=stdin, capture_output=True, encoding="utf-8", errors="surrogateescape"
    )
    if done.returncode != 0:
        raise FixtureError(f"git {args[0]} failed in {workdir}: {done.stderr.strip()[-500:]}")
    return done.stdout


def copy_repository(fx: Fixture, dest: Path) -> None:
    """Copy the fixture's repository files (not fixture.yaml, no caches) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in fixture_files(fx):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(fx.path / rel, dest / rel, follow_symlinks=False)


def make_work_copy(fx: Fixture, dest: Path) -> str:
    """A fresh one-commit git repository of the fixture in `dest`; returns the commit sha.

    The author, committer, date and message are fixed, so the history reveals nothing and every copy of the same
    fixture has the same sha. fixture.yaml stays out: the agent must not see the expected scores.
    """
    copy_repository(fx, dest)
    run_git(dest, "init", "-q", "-b", "main")
    run_git(dest, "add", "-A", "--force", "--", ".")
    run_git(dest, "commit", "-q", "--no-verify", "-m", COMMIT_MESSAGE, env=GIT_IDENTITY)
    return run_git(dest, "rev-parse", "HEAD").strip()


def capture_diff(workdir: Path, base: str) -> str:
    """Everything changed in `workdir` since commit `base`, new and deleted files included, as a binary diff.

    git runs with a throwaway repository of ours (its objects borrowed read-only from the copy): the agent's own
    index stays as it was, and nothing the agent wrote into .git/config (filters, diff drivers, hooks) runs here.
    """
    objects = (workdir / ".git" / "objects").resolve()
    if not objects.is_dir():
        raise FixtureError(f"{workdir} has no .git/objects: the agent's copy lost its repository, no diff possible")
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        trusted = Path(tmp) / "repo"
        run_git(Path(tmp), "init", "-q", str(trusted))
        (trusted / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        env = {"GIT_DIR": str(trusted / ".git"), "GIT_WORK_TREE": str(workdir), "GIT_INDEX_FILE": f"{tmp}/index"}
        run_git(workdir, "read-tree", base, env=env)
        run_git(workdir, "add", "-A", "--", ".", *DIFF_EXCLUDES, env=env)
        return run_git(
            workdir, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-renames", base, env=env
        )


def solution_diff(fx: Fixture, dest: Path) -> str:
    """The reference solution as an agent's diff: solution/ laid over a work copy in `dest`, then captured."""
    base = make_work_copy(fx, dest)
    shutil.copytree(fx.solution_dir, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*CACHE_NAMES, "*.py[co]"))
    return capture_diff(dest, base)
