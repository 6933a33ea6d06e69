"""Unpacking the agent's files from a container: a tar stream written by code we do not trust never writes outside
its folder, never follows a link, and never holds more than its budget."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from bench.containers.archive import pack_folder, unpack_untrusted


def tar_of(*members: tuple[tarfile.TarInfo, bytes]) -> list[bytes]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    data = buffer.getvalue()
    return [data[i : i + 1000] for i in range(0, len(data), 1000)]  # in chunks, as docker-py yields it


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


def test_a_folder_round_trips(tmp_path: Path) -> None:
    source, dest = tmp_path / "source", tmp_path / "dest"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("a = 1\n")
    (source / "link").symlink_to("pkg/a.py")
    dest.mkdir()
    data = pack_folder(source, 10001, 10001)
    assert unpack_untrusted([data], dest, budget=1 << 20, max_members=100) is None
    assert (dest / "pkg" / "a.py").read_text() == "a = 1\n" and (dest / "link").readlink() == Path("pkg/a.py")


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([(entry("../escape"), b"x")], "leads out of the folder"),
        ([(entry("/etc/escape"), b"x")], "leads out of the folder"),
        ([(entry("out", tarfile.SYMTYPE, "/tmp"), b""), (entry("out/escape"), b"x")], "not below a folder"),
        ([(entry("a"), b"x"), (entry("a"), b"y")], "comes twice"),
        ([(entry("big"), b"x" * 2000)], "more than 1000 bytes"),
        ([(entry("a"), b"x" * 600), (entry("b", tarfile.LNKTYPE, "a"), b"")], "more than 1000 bytes"),
        ([(entry("b", tarfile.LNKTYPE, "/etc/passwd"), b"")], "leads out of the folder"),
        ([(entry(f"f{i}"), b"") for i in range(12)], "more than 10 files"),
    ],
)
def test_a_hostile_stream_stops_short_and_writes_nothing_outside(
    tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]], problem: str
) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    assert problem in (unpack_untrusted(tar_of(*members), dest, budget=1000, max_members=10) or "")
    assert not (tmp_path / "escape").exists() and not Path("/tmp/escape").exists()


def test_devices_and_fifos_are_skipped_and_hard_links_become_copies(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    members = [(entry("fifo", tarfile.FIFOTYPE), b""), (entry("a"), b"data"), (entry("b", tarfile.LNKTYPE, "a"), b"")]
    assert unpack_untrusted(tar_of(*members), dest, budget=1000, max_members=10) is None
    assert sorted(p.name for p in dest.iterdir()) == ["a", "b"]
    assert (dest / "b").read_text() == "data" and (dest / "b").stat().st_ino != (dest / "a").stat().st_ino
