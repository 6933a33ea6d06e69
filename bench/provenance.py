"""Where a result came from: the bench's git commit, the agent's version, the model files' sha256."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path


def git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git in `folder`, with the user's own configuration: our repository, not an agent's copy (for that, see
    bench.fixtures.workcopy.run_git).

    Raises OSError when git cannot start, subprocess.TimeoutExpired after 30 s.
    """
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)


def _git(checkout: Path, *args: str) -> str:
    try:
        out = git(checkout, *args)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def git_sha(checkout: Path) -> str:
    """The commit `checkout` (this repository) is at; "" when it is not a git checkout."""
    return _git(checkout, "rev-parse", "HEAD")


def git_dirty(checkout: Path) -> bool:
    """Uncommitted changes in `checkout` outside results/ (results are written while benching)."""
    status = _git(checkout, "status", "--porcelain", "--", ".", ":(exclude)results")
    return bool(status)


def tracked_by_git(folder: Path) -> bool:
    """Whether git tracks any file in `folder` (a run folder shipped in a checkout, as results/example/'s are)."""
    try:
        out = git(folder, "ls-files", "--", ".")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and bool(out.stdout.strip())


def _cache_path() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "sha256.json"


def file_sha256(path: Path) -> str:
    """sha256 of a (large) model file, cached by path, size and mtime so a bench hashes each model once."""
    known = _read_cache()
    if (found := known.get(_key(path))) is not None:
        return str(found)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    remember_sha256(path, digest.hexdigest())
    return digest.hexdigest()


def remember_sha256(path: Path, digest: str) -> None:
    """Record `path`'s sha256, known already (a file hashed before it was moved here), so it is not read again."""
    known = _read_cache() | {_key(path): digest}
    cache_file = _cache_path()
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write_text(json.dumps(known, indent=1))


def _key(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def _read_cache() -> dict[str, str]:
    try:
        found = json.loads(_cache_path().read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
