"""Work done once per host (bench.file_lock): processes that start it together do it once, the others wait."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import ROOT
from bench.file_lock import held, lock_file

# Each process: under the lock, does "the build" unless its result is there (as ensure_gpu_image and fetch do).
BUILD_ONCE = """
import sys, time
from pathlib import Path
from bench.file_lock import held
lock, result, builds = (Path(a) for a in sys.argv[1:])
with held(lock, "the test's build"):
    if not result.exists():
        with open(builds, "a") as f:
            f.write("built\\n")
        time.sleep(0.5)  # the others have started and wait meanwhile
        result.write_text("done")
print(result.read_text())
"""


def test_four_processes_started_together_build_once(tmp_path: Path, child_processes: None) -> None:
    lock, result, builds = tmp_path / "locks" / "x.lock", tmp_path / "result", tmp_path / "builds"
    command = [sys.executable, "-c", BUILD_ONCE, str(lock), str(result), str(builds)]
    started = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [process.communicate(timeout=60)[0] for process in started]
    assert [process.returncode for process in started] == [0, 0, 0, 0]
    assert outputs == ["done\n"] * 4  # each found the result made, by whichever process built it
    assert builds.read_text() == "built\n"


def test_a_second_holder_waits_for_the_first_and_says_for_what(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bench.file_lock")
    lock, order, first_holds = tmp_path / "y.lock", [], threading.Event()

    def second() -> None:  # another thread opens the file anew: the kernel's lock excludes it as another process
        first_holds.wait()
        with held(lock, "the first's build"):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    with held(lock, "nothing"):
        first_holds.set()
        time.sleep(0.3)  # the second asks meanwhile
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]
    assert f"waiting for the first's build (another process holds {lock})" in caplog.text


def test_lock_files_are_named_after_the_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = lock_file("agentbench/llama-cuda:cu12.9-b11434")
    assert path == tmp_path / "agent-bench" / "locks" / "agentbench_llama-cuda_cu12.9-b11434.lock"
