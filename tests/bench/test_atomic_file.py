"""The one atomic write (bench/atomic_file.py): the new content whole in place, or the old one untouched."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from bench.atomic_file import write_atomically, writing_atomically


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


def test_a_streamed_write_that_fails_in_its_block_leaves_the_old_content_and_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"old")
    with pytest.raises(ValueError, match="digest"), writing_atomically(path) as f:
        f.write(b"new part")
        raise ValueError("the digest is not the pinned one")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.gguf"]


WRITES = {"write_text", "write_bytes", "copyfile", "copy", "copy2", "mkstemp", "NamedTemporaryFile"}


def writes(call: ast.Call) -> bool:
    """Whether `call` writes a file: open() or fdopen() in a mode that writes, or a call that writes one whole."""
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    if name in ("open", "fdopen"):
        modes = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
        return any(isinstance(m, ast.Constant) and set(str(m.value)) & set("wax+") for m in modes)
    return name in WRITES


def renames(call: ast.Call) -> bool:
    """os.replace/os.rename, or Path.replace/rename (one argument: str.replace takes two)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("replace", "rename"):
        return False
    return (isinstance(func.value, ast.Name) and func.value.id == "os") or len(call.args) == 1


def own_atomic_writes(path: Path, root: Path) -> list[str]:
    """`module:function` for each function of `path` that writes a file and renames one into place."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
            if any(map(writes, calls)) and any(map(renames, calls)):
                found.append(f"{path.relative_to(root).as_posix()}:{node.name}")
    return found


def test_no_module_writes_and_renames_a_file_of_its_own_but_the_atomic_one() -> None:
    """A file written then renamed into place is written by bench/atomic_file.py, so that its content is synced
    before it takes the name; a rename alone (a blob moved, a link made) needs no sync."""
    root = Path(__file__).resolve().parents[2]
    found = [f for path in sorted((root / "bench").rglob("*.py")) for f in own_atomic_writes(path, root)]
    assert found == ["bench/atomic_file.py:writing_atomically"]


def test_the_rule_finds_a_write_and_rename_of_its_own(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n"
        "def own(path):\n"
        "    with open(path + '.tmp', 'w') as f:\n"
        "        f.write('x')\n"
        "    os.replace(path + '.tmp', path)\n"
        "def link(path):\n"
        "    os.link(path, path + '.2')\n"
        "    os.replace(path + '.2', path + '.3')\n"
        "def text(path):\n"
        "    path.with_suffix('.tmp').write_text('x')\n"
        "    path.with_suffix('.tmp').replace(path)\n"
        "def read(path):\n"
        "    with open(path, 'rb') as f:\n"
        "        return f.read().replace(b'a', b'b')\n"
    )
    assert own_atomic_writes(module, tmp_path) == ["m.py:own", "m.py:text"]
