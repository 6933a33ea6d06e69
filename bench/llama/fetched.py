"""A fetched model checked against what the hub listed, then moved into the cache (bench.llama.fetch fetches it).

llama.cpp b11434 (`common/hf-cache.cpp`) files each download as `blobs/<oid>`, the oid the hub's listing gave for the
file (`lfs.oid`: its sha256, which covers its size too; a file outside LFS has its git blob id), and links
`snapshots/<commit>/<path>` to it; `refs/main` names the commit. A staged file is refused when its content is not its
oid; a good one moves into the cache by a rename (staging is inside the cache), its link and the ref are written after
it, each replacing atomically, so a reader never sees a ref to a missing or partial file.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from bench.atomic_file import write_atomically
from bench.errors import PrerequisiteError
from bench.provenance import file_sha256, remember_sha256

_OID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
BLOCK = 1 << 22


def listed_digest(entry: Path) -> str | None:
    """The oid the hub listed for a snapshot entry: the name of the blob it links to; None for a plain file (llama.cpp
    copies files where links cannot be made, and then nothing tells what the hub listed)."""
    if not entry.is_symlink():
        return None
    blob = entry.resolve()
    return blob.name if blob.parent.name == "blobs" and _OID.match(blob.name) else None


def content_digest(path: Path, oid: str) -> str:
    """The digest of `path` of the oid's kind: sha256 (an LFS oid), else git's blob id (sha1 of a header and it)."""
    digest = hashlib.sha256() if len(oid) == 64 else hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        while chunk := f.read(BLOCK):
            digest.update(chunk)
    return digest.hexdigest()


def staged_entries(repo: Path) -> list[tuple[str, Path]]:
    """(commit, snapshot entry) of each file llama.cpp fetched into the staged repository folder, by its refs."""
    refs = repo / "refs"
    commits = sorted({ref.read_text().strip() for ref in refs.iterdir() if ref.is_file()}) if refs.is_dir() else []
    entries = []
    for commit in commits:
        snapshot = repo / "snapshots" / commit
        entries += [(commit, p) for p in sorted(snapshot.rglob("*")) if p.is_symlink() or p.is_file()]
    return entries


def check_staged(repo: Path, what: str, cache: Path) -> None:
    """Every file of the staged repository folder is what the hub listed; a bad one is removed from staging (the next
    try fetches it anew) and refused in one line. Good ones have their sha256 remembered for the cache's copy."""
    for _, entry in staged_entries(repo):
        listed = listed_digest(entry)
        if listed is None:
            raise PrerequisiteError(
                f"{what}: {entry.name} cannot be checked, as llama.cpp could not link it to its blob in {cache}: set "
                "model_cache (MODEL_CACHE) to a folder on a file system with symbolic links"
            )
        blob = entry.resolve()
        found = content_digest(blob, listed)
        if found != listed:
            size = blob.stat().st_size
            entry.unlink()
            blob.unlink()
            raise PrerequisiteError(
                f"{what}: the download of {entry.name} is corrupted or cut short ({size} bytes with digest "
                f"{found[:16]}..., the hub listed {listed[:16]}...), so it was not put in {cache}: run again "
                "(`make models`) to fetch it anew, and check MODEL_ENDPOINT/HF_ENDPOINT if it happens again"
            )


def move_into_cache(staged: Path, repo: Path) -> None:
    """The checked files of the staged repository folder into the cache's: blobs first, then links, then refs; the
    staged folder is removed after."""
    for commit, entry in staged_entries(staged):
        blob = entry.resolve()
        target = repo / "blobs" / blob.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.replace(blob, target)
            if len(blob.name) == 64:
                remember_sha256(target, blob.name)  # checked in staging: no second read of a large file
        link = repo / "snapshots" / commit / entry.relative_to(staged / "snapshots" / commit)
        link.parent.mkdir(parents=True, exist_ok=True)
        partial = _partial(link)
        os.symlink(os.path.relpath(target, link.parent), partial)
        os.replace(partial, link)
    for ref in sorted(p for p in (staged / "refs").iterdir() if p.is_file()):
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        write_atomically(repo / "refs" / ref.name, ref.read_bytes())
    shutil.rmtree(staged)


def _partial(path: Path) -> Path:
    """Where `path` is made before it is renamed over whatever is there (a reader never sees it half made)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    return partial


def check_cached(found: Path, repo: Path) -> None:
    """A cached model file is what its name in the cache says the hub listed (hashed once per file: bench.provenance);
    a plain file, which says nothing, is taken as it is."""
    listed = listed_digest(found)
    if listed is None:
        return
    digest = file_sha256(found) if len(listed) == 64 else content_digest(found.resolve(), listed)
    if digest != listed:
        raise PrerequisiteError(
            f"{found} is corrupted (digest {digest[:16]}..., the hub listed {listed[:16]}...): remove {repo} and run "
            "`make models` to fetch it again"
        )
