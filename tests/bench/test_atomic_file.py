"""The one atomic write (bench/atomic_file.py): the new content whole in place, or the old one untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.atomic_file import write_atomically


def test_the_new_content_takes_the_place_of_the_old_and_nothing_else_is_left(tmp_path: Path) -> None:
    path = tmp_path / "merged.csv"
    path.write_bytes(b"old\n")
    write_atomically(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    write_atomically(tmp_path / "fresh.json", b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "merged.csv"]


def test_a_write_that_fails_before_the_rename_leaves_the_old_content_and_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_the_content_and_the_rename_are_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    write_atomically(tmp_path / "out.csv", b"x")
    assert [Path(s).name for s in synced] == [f".out.csv.{os.getpid()}.partial", tmp_path.name]
