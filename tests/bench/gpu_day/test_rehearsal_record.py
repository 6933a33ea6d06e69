"""The GPU rehearsal cannot lose a figure: each is a line of figures.jsonl the moment it is measured, each step has a
deadline inside the whole's, a stalled step is given up and the rest still runs, the device delta comes from NVML
on the real path (the fake injected as `pynvml`, not passed in), and a killed rehearsal keeps what it measured."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_rehearsal import CONTEXT, IDLE, stand_in_probe

from bench.rehearsal import __main__ as rehearsal
from bench.rehearsal.__main__ import parse, rehearse
from bench.testing.fake_pynvml import GIB, MIB, FakeDevice, FakeNvml

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[3]
SHIM = ROOT / "tests" / "host_matrix" / "nvml_shim"


def lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "figures.jsonl").read_text().splitlines()]


def test_the_device_delta_is_nvmls_own_on_the_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    card = FakeDevice("GPU-11111111-2222-3333-4444-555555555555", [IDLE], name="NVIDIA H200", total=140 * GIB)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([card]))  # as `import pynvml` finds the real one
    monkeypatch.setenv("LLAMA_SERVER", str(tmp_path / "none"))
    args = parse(
        [
            "--out",
            str(tmp_path / "out"),
            "--sizes",
            "1,8",
            "--interval",
            "0.01",
            "--cost-seconds",
            "0.2",
            "--hold-seconds",
            "0.05",
        ]
    )
    figures = rehearse(args, holder=stand_in_probe(card, []))
    held = {f.name: f for f in figures if f.step == "allocation" and "GiB" in f.name}
    for size in (1, 8):
        for who in ("child", "grandchild"):
            assert held[f"{size} GiB in a {who}"].extra["device_delta_mib"] == (CONTEXT + size * GIB) // MIB
    written = lines(tmp_path / "out")
    assert [entry["name"] for entry in written if "name" in entry] == [f.name for f in figures]  # every one, in order
    steps = {entry["step_done"]: entry["status"] for entry in written if "step_done" in entry}
    assert steps == {name: "ok" for name in ("inventory", "nvml calls", "allocation", "sampler cost", "llama-server")}


def test_a_step_past_its_deadline_is_given_up_and_the_next_steps_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = FakeDevice("GPU-11111111-2222-3333-4444-555555555555", [IDLE])

    def stalled(*args: object, **kwargs: object) -> object:
        threading.Event().wait()  # a probe that never returns (its own wait is bounded too: test_cuda_probe.py)
        raise AssertionError("not reached")

    monkeypatch.setitem(rehearsal.STEP_S, "allocation", 1.0)
    args = parse(["--out", str(tmp_path), "--interval", "0.01", "--cost-seconds", "0.2", "--llama-wheel", ""])
    started = time.monotonic()
    monkeypatch.setenv("LLAMA_SERVER", str(tmp_path / "none"))
    figures = rehearse(args, FakeNvml([card]), stalled)  # type: ignore[arg-type]
    assert time.monotonic() - started < 15
    given_up = [f for f in figures if f.step == "allocation" and f.name == "deadline"]
    assert [(f.status, f.detail) for f in given_up] == [("FAIL", "still running after 1 s: given up")]
    assert [f.name for f in figures if f.step == "sampler cost"] == [
        "CPU % of one core, one card",
        "CPU % of one core, every card",
    ]
    assert {e["step_done"]: e["status"] for e in lines(tmp_path) if "step_done" in e}["allocation"] == "deadline"


@pytest.mark.processes
def test_the_first_figure_comes_at_once_and_a_killed_rehearsal_keeps_every_figure(tmp_path: Path) -> None:
    """`python3 -m bench.rehearsal` as on the device, on a recorded H200 host (the NVML shim of the host matrix),
    killed with SIGKILL in the middle of its sampler-cost step: every line it wrote is whole."""
    host = tmp_path / "host.json"
    host.write_text(json.dumps({"driver": "R580", "gpus": "gpus-1.txt"}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SHIM), str(ROOT)]), AGENTBENCH_HOST=str(host))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "bench.rehearsal", "--out", str(out), "--sizes", "1", "--cost-seconds", "30"]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        first = wait_for(out, lambda found: bool(found), 30)
        assert first is not None and time.monotonic() - started < 30, "no figure within 30 s"
        assert first[0]["name"] == "driver, newest CUDA it runs" and first[0]["value"] == ["580.159.03", [13, 0]]
        steps = wait_for(out, lambda found: any(e.get("step_done") == "allocation" for e in found), 120)
        assert steps is not None, "the allocation step never ended"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    kept = lines(out)  # every line parses: nothing half-written
    assert {e["step_done"] for e in kept if "step_done" in e} >= {"inventory", "nvml calls", "allocation"}
    assert any(e.get("step") == "allocation" for e in kept)  # here the probe fails (no libcuda): a finding
    assert not (out / "rehearsal.json").exists()  # killed before its end: the lines are what it keeps


def wait_for(out: Path, done: object, seconds: float) -> list[dict[str, object]] | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (out / "figures.jsonl").exists():
            found = lines(out)
            if done(found):  # type: ignore[operator]
                return found
        time.sleep(0.1)
    return None


def test_tests_gpu_are_collected_where_only_the_rehearsals_dependencies_are() -> None:
    blocked = ["pydantic", "yaml", "docker", "matplotlib", "scipy"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import pytest\n"
        "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '--run-gpu', 'tests/gpu']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "test_gpu_buffers.py::" in done.stdout and "test_gpu_real.py::" in done.stdout


def test_make_gpu_rehearsal_passes_its_options() -> None:
    options = ["OUT=/o", "DEVICE=GPU-1", "LLAMA_SOURCE=/s.tar.xz", "LLAMA_BUILD=/b", "SIZES=1,8", "BUDGET_S=300"]
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "gpu-rehearsal", *options], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    command = " ".join(done.stdout.replace("\\\n", " ").split())  # the recipe's lines, joined as the shell does
    assert command.endswith(
        "-m bench.rehearsal --out /o --device GPU-1 --llama-source /s.tar.xz --llama-build /b --sizes 1,8 "
        "--budget-s 300"
    )
