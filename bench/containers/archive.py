"""Tar streams between this host and a container's volume: the work copy packed for it, and the agent's files
unpacked from it, which code we do not trust wrote.

Unpacking takes only folders, regular files, symbolic links (made, never followed) and hard links (made as copies)
below the destination; devices, FIFOs and sockets are skipped. A member whose path climbs out, or whose folder on
this host is anything but a real folder made by this unpacking, is refused. The file contents may total at most
`budget` bytes and the members `max_members`: a sparse file that a tmpfs holds in a few pages but that a tar
stream spells out in full stops the unpacking instead of filling this host's disk.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath


def pack_folder(folder: Path, uid: int, gid: int) -> bytes:
    """A tar of `folder`'s contents (names relative to it), every member owned by uid:gid."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(folder, arcname=".", filter=owned)
    return buffer.getvalue()


class _ChunkReader(io.RawIOBase):
    """A file over an iterator of byte chunks (what docker-py's get_archive yields)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks: Iterator[bytes] = iter(chunks)
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self.pending:
            self.pending = next(self.chunks, b"")
            if not self.pending:
                return 0
        count = min(len(buffer), len(self.pending))
        buffer[:count] = self.pending[:count]
        self.pending = self.pending[count:]
        return count


def relative_path(name: str) -> PurePosixPath | None:
    """The member's path below the destination; None for the root itself; ValueError when it climbs out."""
    path = PurePosixPath(name)
    parts = [part for part in path.parts if part not in ("", ".")]
    if path.is_absolute() or ".." in parts:
        raise ValueError(f"{name!r} leads out of the folder")
    return PurePosixPath(*parts) if parts else None


def _real_folder_below(dest: Path, folder: PurePosixPath) -> bool:
    """Every step from dest down to `folder` is a real folder (not a link), so writing inside stays below dest."""
    current = dest
    for part in folder.parts:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            return False
    return True


def unpack_untrusted(chunks: Iterable[bytes], dest: Path, budget: int, max_members: int) -> str | None:
    """Unpack a tar stream into the empty folder `dest`; returns why it stopped short, or None when whole."""
    used, members = 0, 0
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks)), mode="r|") as tar:
        for member in tar:
            members += 1
            if members > max_members:
                return f"more than {max_members} files and folders"
            try:
                rel = relative_path(member.name)
            except ValueError as e:
                return f"a member {e}"
            if rel is None:
                continue
            target = dest / rel
            if not _real_folder_below(dest, rel.parent) or os.path.lexists(target):
                return f"{rel} is not below a folder of its own, or comes twice"
            if member.isdir():
                target.mkdir(mode=0o700)
                target.chmod((member.mode & 0o755) | 0o700)
            elif member.isreg() or member.islnk():
                used += member.size if member.isreg() else 0
                if used > budget:
                    return f"its files hold more than {budget} bytes"
                if member.islnk():
                    used, problem = _copy_link(
                        dest=dest, linkname=member.linkname, target=target, used=used, budget=budget
                    )
                    if problem:
                        return problem
                else:
                    source = tar.extractfile(member)
                    assert source is not None
                    with source, open(target, "xb") as out:
                        shutil.copyfileobj(source, out)
                target.chmod((member.mode & 0o755) | 0o600)
            elif member.issym():
                os.symlink(member.linkname, target)
            # else: a device, FIFO or socket, which no diff could hold: skipped
    return None


def _copy_link(dest: Path, linkname: str, target: Path, used: int, budget: int) -> tuple[int, str | None]:
    """A hard link in the stream, made as a copy of the regular file it names (unpacked before it)."""
    try:
        rel = relative_path(linkname)
    except ValueError as e:
        return used, f"a hard link {e}"
    source = dest / rel if rel is not None else dest
    is_file = rel is not None and _real_folder_below(dest, rel.parent) and source.is_file() and not source.is_symlink()
    if not is_file:
        return used, f"a hard link to {linkname!r} names no file unpacked before it"
    used += source.stat().st_size
    if used > budget:
        return used, f"its files hold more than {budget} bytes"
    shutil.copyfile(source, target, follow_symlinks=False)
    return used, None
