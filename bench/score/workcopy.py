"""The agent's work copy of a fixture: a one-commit git repository, and the diff of what the agent changed in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.errors import FixtureError
from bench.score.fixtures import CACHE_NAMES, CACHE_SUFFIXES, Fixture, fixture_files

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


class DiffTooLarge(FixtureError):
    """The agent's changes make a diff larger than the bench keeps."""


def _git_command(*args: str) -> list[str]:
    # safe.directory: the copy may belong to another uid (the container user) by the time we diff it.
    return ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args]


def _git_env(env: dict[str, str] | None) -> dict[str, str]:
    trusted = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_NO_REPLACE_OBJECTS": "1"}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**inherited, **trusted, **(env or {})}


def run_git(workdir: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    """Run git in `workdir`, ignoring the user's and system's git configuration; a failure is a FixtureError."""
    # surrogateescape: file contents in a diff need not be UTF-8, and must survive the round trip unchanged.
    done = subprocess.run(
        _git_command(*args), cwd=workdir, env=_git_env(env), input=stdin, capture_output=True, encoding="utf-8",
        errors="surrogateescape",
    )  # fmt: skip
    if done.returncode != 0:
        raise FixtureError(f"git {args[0]} failed in {workdir}: {done.stderr.strip()[-500:]}")
    return done.stdout


def git_output_capped(workdir: Path, *args: str, env: dict[str, str], max_bytes: int) -> str:
    """run_git for a command whose output may be huge: more than `max_bytes` of it is DiffTooLarge, read no further."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            _git_command(*args), cwd=workdir, env=_git_env(env), stdout=subprocess.PIPE, stderr=errors
        )
        assert proc.stdout is not None
        with proc.stdout:
            data = proc.stdout.read(max_bytes + 1)
            if len(data) > max_bytes:
                proc.kill()
                proc.wait()
                raise DiffTooLarge(f"the agent's changes make a diff of more than {max_bytes} bytes")
        if proc.wait() != 0:
            errors.seek(0)
            raise FixtureError(f"git {args[0]} failed in {workdir}: {errors.read().decode(errors='replace')[-500:]}")
    return data.decode("utf-8", errors="surrogateescape")


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


def capture_diff(workdir: Path, base: str, fx: Fixture | None = None, max_bytes: int | None = None) -> str:
    """Everything changed in `workdir` since commit `base`, new and deleted files included, as a binary diff.

    git runs with a throwaway repository of ours: the agent's own index stays as it was, and nothing the agent wrote
    into .git/config (filters, diff drivers, hooks) runs here. With `fx`, the base commit is rebuilt from the fixture
    (make_work_copy gives the same sha every time), so nothing of the agent's .git is read: a copy whose .git was
    deleted or rewritten is diffed from its files as they are. Without `fx`, the objects come from workdir/.git.
    A diff of more than `max_bytes` is DiffTooLarge.
    """
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        if fx is not None:
            rebuilt = make_work_copy(fx, Path(tmp) / "base")
            if rebuilt != base:
                raise FixtureError(f"fixture {fx.name} changed during the run ({base[:12]} is now {rebuilt[:12]})")
            objects = Path(tmp) / "base" / ".git" / "objects"
        else:
            objects = (workdir / ".git" / "objects").resolve()
            if not objects.is_dir():
                raise FixtureError(f"{workdir} has no .git/objects: the agent's copy lost its repository")
        trusted = Path(tmp) / "repo"
        run_git(Path(tmp), "init", "-q", str(trusted))
        (trusted / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        env = {"GIT_DIR": str(trusted / ".git"), "GIT_WORK_TREE": str(workdir), "GIT_INDEX_FILE": f"{tmp}/index"}
        run_git(workdir, "read-tree", base, env=env)
        run_git(workdir, "add", "-A", "--", ".", *DIFF_EXCLUDES, env=env)
        diff = ["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-renames", base]
        if max_bytes is None:
            return run_git(workdir, *diff, env=env)
        return git_output_capped(workdir, *diff, env=env, max_bytes=max_bytes)


def solution_diff(fx: Fixture, dest: Path) -> str:
    """The reference solution as an agent's diff: solution/ laid over a work copy in `dest`, then captured."""
    base = make_work_copy(fx, dest)
    shutil.copytree(fx.solution_dir, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*CACHE_NAMES, "*.py[co]"))
    return capture_diff(dest, base, fx)
