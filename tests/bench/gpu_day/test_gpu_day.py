""".ci/gpu-day.sh, the one command the integrator runs on a lent GPU machine, run here against a recorded H200 host
(the host matrix's NVML shim) with a bundle as `make gpu-day-bundle` lays it out: it needs nothing from the network,
writes its figures under $OUT, and its llama-server step says why it has no server where no complete CUDA is."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHIM = ROOT / "tests" / "host_matrix" / "nvml_shim"


def bundle(folder: Path) -> Path:
    """A source archive in the bundle's layout (llama.cpp/ inside), too small to build anything."""
    folder.mkdir()
    with tarfile.open(folder / "llama.cpp-b11434-src.tar.xz", "w:xz") as archive:
        data = b"cmake_minimum_required(VERSION 3.14)\nproject(stand-in)\n"
        info = tarfile.TarInfo("llama.cpp/CMakeLists.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return folder


@pytest.mark.processes
def test_the_gpu_day_writes_its_figures_under_out_without_the_network(tmp_path: Path) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps({"driver": "R580", "gpus": "gpus-1.txt"}))
    out = tmp_path / "out"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OUT": str(out),
        "PYTHONPATH": str(SHIM),
        "AGENTBENCH_HOST": str(host),
        "GPU_DAY_BUNDLE": str(bundle(tmp_path / "bundle")),
        "BUDGET_S": "120",
        "SIZES": "1",
        "HOLD_S": "0.2",
        "COST_S": "0.5",  # short: what is asked is where the figures go, not their sizes
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",  # anything that tried would fail
    }
    started = time.monotonic()
    done = subprocess.run(
        ["sh", str(ROOT / ".ci" / "gpu-day.sh")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert time.monotonic() - started < 120, done.stdout[-2000:]
    assert {p.name for p in out.iterdir()} >= {"figures.jsonl", "rehearsal.json", "rehearsal.txt", "gpu-tests.txt"}
    figures = json.loads((out / "rehearsal.json").read_text())
    assert figures[0]["name"] == "driver, newest CUDA it runs" and figures[0]["value"] == ["580.159.03", [13, 0]]
    toolkit = [f for f in figures if f["step"] == "llama build" and f["name"] == "CUDA toolkit"]
    assert [f["status"] for f in toolkit] == ["FAIL"], figures[-5:]  # no complete CUDA (cuBLAS) on this machine
    assert "tests/gpu not run (no llama-server built" in (out / "gpu-tests.txt").read_text()
    assert done.stdout.strip().splitlines()[-1].startswith("gpu-day: rehearsal exit 1, ")
    assert os.environ.get("OUT") is None or os.environ["OUT"] != str(out)  # nothing leaked into this process
