"""The GPU rehearsal's logic against the fake NVML: a stand-in probe holds "allocations" in real child and grandchild
processes (the fake device lists the holder's PID with the bytes), so the sampler's figures are checked against the
known sizes through the real process tree. And it imports nothing the device machine lacks."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.measure.cuda_probe import Held
from bench.rehearsal.__main__ import parse, rehearse, table, write
from bench.testing.fake_pynvml import GIB, MIB, FakeDevice, FakeNvml, State

ROOT = Path(__file__).resolve().parents[3]
CONTEXT = 500 * MIB
IDLE = State(used=GIB)


def children_of(pid: int) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if found:
            return [int(p) for p in found]
        time.sleep(0.01)
    raise AssertionError("the stand-in probe started no child")


def stand_in_probe(card: FakeDevice, log: list[tuple[int, int, str]]):  # type: ignore[no-untyped-def]
    @contextlib.contextmanager
    def hold(
        n_bytes: int, depth: int = 1, device: str = "", cwd: str | None = None, ready_timeout_s: float = 0
    ) -> Iterator[Held]:
        args = ["sleep", "60"] if depth == 1 else ["sh", "-c", "sleep 60 & wait"]
        with subprocess.Popen(args) as proc:
            holder = proc.pid if depth == 1 else children_of(proc.pid)[0]
            card.states = [State(used=IDLE.used + CONTEXT + n_bytes, processes=[(holder, CONTEXT + n_bytes)])]
            log.append((n_bytes, depth, device))
            try:
                yield Held(proc.pid, holder)
            finally:
                card.states = [IDLE]
                proc.kill()

    return hold


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory, child_processes: None):  # type: ignore[no-untyped-def]
    """One rehearsal, shared by the tests that read its figures."""
    tmp_path = tmp_path_factory.mktemp("rehearsal")
    card = FakeDevice("GPU-11111111-2222-3333-4444-555555555555", [IDLE], name="NVIDIA H200", total=140 * GIB)
    other = FakeDevice("GPU-66666666-2222-3333-4444-555555555555", [IDLE])
    nvml = FakeNvml([card, other])
    probes: list[tuple[int, int, str]] = []
    args = parse(
        [
            "--out",
            str(tmp_path / "out"),
            "--sizes",
            "1,8,200",
            "--interval",
            "0.01",
            "--cost-seconds",
            "0.3",
            "--hold-seconds",
            "0.1",
        ]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLAMA_SERVER", str(tmp_path / "none"))  # no CUDA llama-server here: that step is skipped
        return rehearse(args, nvml, stand_in_probe(card, probes)), probes, args, card


def test_the_known_allocations_are_seen_in_a_child_and_a_grandchild(rehearsal) -> None:  # type: ignore[no-untyped-def]
    figures, probes, _, card = rehearsal
    found = {f.name: f for f in figures if f.step == "allocation"}
    assert found["bare CUDA context MiB"].value == 500
    for size in (1, 8):
        for who in ("child", "grandchild"):
            figure = found[f"{size} GiB in a {who}"]
            assert (figure.value, figure.status) == (size * 1024 + 500, "ok"), figure
            assert f"= {size * 1024} +500 (context 500)" in figure.detail
    assert found["200 GiB in a child"].status == "skipped"  # more than the card has free
    assert [p[:2] for p in probes] == [(0, 1), (GIB, 1), (GIB, 2), (8 * GIB, 1), (8 * GIB, 2)]
    assert {p[2] for p in probes} == {card.uuid}  # every probe ran on the pinned card


def test_inventory_nvml_calls_and_costs_are_recorded(rehearsal) -> None:  # type: ignore[no-untyped-def]
    figures, _, args, _ = rehearsal
    by_name = {f.name: f for f in figures}
    assert by_name["driver, newest CUDA it runs"].value == ("580.159.03", (13, 0))
    assert by_name["gpu0 name"].value == "NVIDIA H200" and by_name["gpu1 MIG instances"].value == []
    calls = [f for f in figures if f.step == "nvml calls"]
    assert len(calls) == 10 and all(f.status == "ok" and f.detail.endswith("µs") for f in calls)
    assert by_name["GPU-11111111 memory v2 used MiB"].value == 1024
    costs = [f for f in figures if f.step == "sampler cost"]
    assert [f.name for f in costs] == ["CPU % of one core, one card", "CPU % of one core, every card"]
    assert "over 1 GPU(s)" in costs[0].detail and "over 2 GPU(s)" in costs[1].detail
    assert by_name["CUDA llama-server"].status == "skipped"
    write(figures, Path(args.out))
    saved = json.loads((Path(args.out) / "rehearsal.json").read_text())
    assert len(saved) == len(figures) and (Path(args.out) / "rehearsal.txt").read_text().strip() == table(figures)


@pytest.mark.usefixtures("child_processes")
def test_a_mig_instance_refusing_its_process_list_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    instance = FakeDevice("MIG-4b5a1c2d-0000-5f6e-8a9b-0123456789ab", [IDLE], refuse_processes=True)
    nvml = FakeNvml([FakeDevice("GPU-parent", [IDLE], mig_devices=[instance])])
    args = parse(
        ["--out", str(tmp_path), "--sizes", "", "--interval", "0.01", "--cost-seconds", "0.1", "--hold-seconds", "0.05"]
    )
    figures = rehearse(args, nvml, stand_in_probe(nvml.devices[0], []))
    refused = [f for f in figures if f.name.startswith("MIG-4b5a1c2") and "processes" in f.name]
    assert [f.status for f in refused] == ["FAIL", "FAIL"] and "NoPermission" in refused[0].detail
    assert next(f for f in figures if f.name == "gpu0 MIG instances").value == [instance.uuid]


@pytest.mark.usefixtures("child_processes")
def test_the_rehearsal_imports_nothing_the_device_machine_lacks() -> None:
    blocked = ["pydantic", "yaml", "docker", "matplotlib", "scipy"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import bench.rehearsal.__main__, bench.rehearsal.llama_step, bench.rehearsal.build_llama\n"
        "import bench.rehearsal.record, bench.rehearsal.deadline, bench.llama.process, bench.llama.warmup\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_llama_server_build_starts_first_and_the_short_steps_run_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_processes: None
) -> None:
    """The GPU day's longest step (building llama-server for the card) starts before the inventory, gets the budget
    to its end less the serving's, and the served step takes the server it built (issue 49, item 7)."""
    from bench.rehearsal import __main__ as rehearsal_main
    from bench.rehearsal import build_llama, llama_step

    card = FakeDevice("GPU-11111111-2222-3333-4444-555555555555", [IDLE], name="NVIDIA H200", total=140 * GIB)
    order: list[tuple[str, float]] = []
    built = tmp_path / "build" / "build" / "bin" / "llama-server"

    def build_server(archive: Path, work: Path, architectures: str, deadline: float, emit: object) -> Path:
        order.append(("build starts", time.monotonic()))
        time.sleep(1.0)  # the short steps run meanwhile
        order.append(("build ends", deadline - time.monotonic()))
        return built

    def llama_memory(server: Path, work: Path, **kwargs: object) -> None:
        order.append((f"serves {server.relative_to(tmp_path)} from {work.relative_to(tmp_path)}", time.monotonic()))

    inventory = rehearsal_main.inventory

    def inventory_step(*args: Any) -> Any:
        order.append(("inventory starts", time.monotonic()))
        return inventory(*args)

    monkeypatch.setattr(rehearsal_main, "inventory", inventory_step)
    monkeypatch.setattr(build_llama, "build_server", build_server)
    monkeypatch.setattr(llama_step, "llama_memory", llama_memory)
    argv = ["--out", str(tmp_path / "out"), "--sizes", "1", "--cost-seconds", "0.2", "--hold-seconds", "0.1"]
    argv += ["--llama-source", str(tmp_path / "llama.cpp-src.tar.xz"), "--llama-build", str(tmp_path / "build")]
    argv += ["--budget-s", "200"]
    figures = rehearse(parse(argv), FakeNvml([card]), stand_in_probe(card, []))
    assert [what for what, _ in order[:2]] == ["build starts", "inventory starts"]  # the build first, then beside it
    assert order[2][0] == "build ends" and 200 - 90 - 10 < order[2][1] <= 200 - 90  # the budget less SERVE_S
    assert order[3][0] == "serves build/build/bin/llama-server from build"
    steps = [f.step for f in figures]
    assert steps.index("inventory") < steps.index("sampler cost") < len(steps)
