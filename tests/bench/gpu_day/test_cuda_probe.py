"""The known allocation the GPU rehearsal and self-check measure against, in a child and in a grandchild, played
with a stand-in libcuda (compiled here) that says yes to every call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bench.measure.cuda_probe import ProbeError, held

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[3]
SAYS_YES = "".join(
    f"int {name}() {{ return 0; }}\n"
    for name in ("cuInit", "cuDeviceGet", "cuCtxCreate_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuCtxDestroy_v2")
)


def libcuda(tmp_path: Path, source: str) -> Path:
    compiler = shutil.which("cc")
    assert compiler, "a C compiler (cc) is needed, as for the llama.cpp build"
    (tmp_path / "cuda.c").write_text(source)
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(tmp_path / "cuda.c")], check=True
    )
    return tmp_path / "libcuda.so.1"


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def test_the_allocation_is_held_in_a_child_or_a_grandchild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTBENCH_LIBCUDA", str(libcuda(tmp_path, SAYS_YES)))
    with held(2**30, depth=1, cwd=str(ROOT)) as child:
        assert child.holder_pid == child.caller_pid
    with held(2**30, depth=2, device="GPU-abc", cwd=str(ROOT)) as relayed:
        assert relayed.holder_pid != relayed.caller_pid and parent_of(relayed.holder_pid) == relayed.caller_pid
        environ = Path(f"/proc/{relayed.holder_pid}/environ").read_bytes().split(b"\0")
        assert b"CUDA_VISIBLE_DEVICES=GPU-abc" in environ


def test_a_failed_call_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AGENTBENCH_LIBCUDA",
        str(libcuda(tmp_path, SAYS_YES.replace("cuMemAlloc_v2() { return 0", "cuMemAlloc_v2() { return 2"))),
    )
    with pytest.raises(ProbeError, match="error cuMemAlloc_v2 2"), held(2**36, cwd=str(ROOT)):
        pass


def test_a_probe_stuck_in_a_cuda_call_is_killed_with_its_grandchild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for `ready` is bounded: a cuInit that never returns (a wedged driver) costs the deadline, not the
    rehearsal's whole command, and leaves no process holding the card."""
    stuck = SAYS_YES.replace("int cuInit() { return 0; }", "#include <unistd.h>\nint cuInit() { pause(); return 0; }")
    monkeypatch.setenv("AGENTBENCH_LIBCUDA", str(libcuda(tmp_path, stuck)))
    with (
        pytest.raises(ProbeError, match="said nothing for 2 s"),
        held(2**20, depth=2, cwd=str(ROOT), ready_timeout_s=2),
    ):
        pass
    leftovers = subprocess.run(["pgrep", "-f", f"cuda_probe {2**20}"], capture_output=True, text=True).stdout.split()
    assert leftovers == []
