"""`python -m bench gpu-check` (make gpu-check): once on a GPU host, check what the bench measures there.

1. NVML starts and lists the GPUs.
2. The sampler's CPU cost at the configured interval (target: 2% of one core, as in perf/gpu_sampler.py).
3. The servers `servers: auto` picks, on the GPU, with the configured models (fetched on first use): for each, the
   memory NVML reports for its process against the buffers llama-server itself logs as placed on the GPU (model,
   KV, compute, output). NVML must show at least those, and more by no more than a CUDA context.
4. compose up and down with the GPU reservation (only where the NVIDIA Container Toolkit is installed).
5. One real run at --ctx (default: the settings' first window) with the configured models, via `python -m bench run`.

It prints one table and exits 1 when a check failed (a check that does not apply to this host is skipped).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from types import ModuleType
from typing import Any

from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_or_none
from bench.errors import BenchError
from bench.measure.nvml import start_nvml
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher
from bench.measure.sampler import GpuSampler
from bench.results.append import read_rows
from bench.servers.buffers import buffers_in_log, on_gpu
from bench.servers.choose import probe_host, where_servers_run
from bench.servers.compose import COMPOSE_PROJECT, ComposeServers
from bench.servers.embedded import EmbeddedServers

SAMPLER_SECONDS = 5.0
SAMPLER_TARGET_PERCENT = 2.0
# What a CUDA context takes besides the buffers llama.cpp allocates (driver, kernels, cuBLAS workspace): a few
# hundred MiB on current drivers with lazy module loading. More than this means memory the bench cannot explain.
CUDA_CONTEXT_MAX_MIB = 1024
VERBOSE_LOG = {"LLAMA_ARG_LOG_VERBOSITY": "4"}  # llama.cpp logs its buffer sizes from verbosity 4


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok, FAIL, skipped
    detail: str


def check_nvml() -> Check:
    nvml, reason = start_nvml()
    if nvml is None:
        return Check("NVML", "FAIL", f"{reason}: install the NVIDIA driver, then `make setup`")
    try:
        names = [nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(nvml.nvmlDeviceGetCount())]
        driver = nvml.nvmlSystemGetDriverVersion()
    finally:
        nvml.nvmlShutdown()
    if not names:
        return Check("NVML", "FAIL", "NVML started but sees no GPU")
    return Check("NVML", "ok", f"driver {driver}: {', '.join(str(n) for n in names)}")


@dataclass(frozen=True)
class SamplerCost:
    samples_per_s: float
    cpu_percent: float  # the sampler thread's CPU time, as a share of one core
    measured: bool
    method: str


def measure_sampler_cost(interval_s: float, seconds: float, nvml: ModuleType | None = None) -> SamplerCost:
    """Run the NVML sampler on this process for `seconds`: its sample rate and its own CPU cost (also `make perf`)."""
    sampler = GpuSampler(PidMatcher({"flint": os.getpid()}), interval_s=interval_s, nvml=nvml)
    sampler.baseline()
    started = time.monotonic()
    sampler.start()
    time.sleep(seconds)
    reading = sampler.stop()
    wall_s = time.monotonic() - started
    return SamplerCost(reading.samples / wall_s, 100 * sampler.thread_cpu_s / wall_s, reading.measured, reading.method)


def check_sampler_cost(config: BenchConfig) -> Check:
    cost = measure_sampler_cost(config.gpu_sample_interval_s, SAMPLER_SECONDS)
    if not cost.measured:
        return Check("sampler CPU cost", "FAIL", f"the sampler measured nothing: {cost.method}")
    detail = f"{cost.cpu_percent:.2f}% of one core at {config.gpu_sample_interval_s} s ({cost.samples_per_s:.1f}/s)"
    status = "ok" if cost.cpu_percent <= SAMPLER_TARGET_PERCENT else "FAIL"
    return Check("sampler CPU cost", status, f"{detail}; target {SAMPLER_TARGET_PERCENT}%")


def memory_against_buffers(role: str, nvml_mib: int | None, log: str) -> Check:
    """One server's NVML figure against the GPU buffers its log names."""
    name = f"{role}: NVML vs buffers"
    gpu = on_gpu(buffers_in_log(log))
    if not gpu:
        return Check(name, "FAIL", "its log names no buffer on a GPU: it runs on the CPU (see `servers` above)")
    total = sum(gpu.values())
    parts = ", ".join(f"{kind} {mib:.0f}" for kind, mib in sorted(gpu.items()))
    if nvml_mib is None:
        return Check(name, "FAIL", f"NVML shows no memory for its process; buffers {total:.0f} MiB ({parts})")
    extra = nvml_mib - total
    status = "ok" if 0 <= extra <= CUDA_CONTEXT_MAX_MIB else "FAIL"
    detail = f"NVML {nvml_mib} MiB = buffers {total:.0f} MiB ({parts}) {extra:+.0f} MiB"
    return Check(name, status, f"{detail}; allowed 0 to +{CUDA_CONTEXT_MAX_MIB} MiB (the CUDA context)")


def check_servers(config: BenchConfig, ctx: int) -> list[Check]:
    host = probe_host(docker_or_none())  # the one look at the host
    kind, reason = where_servers_run(host)
    servers: Any
    if kind == "compose":
        servers = ComposeServers(config, gpu=True)
    else:
        servers = EmbeddedServers(config, ROOT / "results" / "gpu-check", gpu=bool(host.llama_gpus))
        if not servers.gpu:
            return [
                Check("servers", "FAIL", reason),
                Check("compose with GPU reservation", "skipped", "no NVIDIA Container Toolkit"),
            ]
    checks = [Check("servers", "ok", f"{kind}: {reason}")]
    saved = {key: os.environ.get(key) for key in VERBOSE_LOG}
    os.environ.update(VERBOSE_LOG)
    try:
        endpoints = servers.start(ctx)
        matcher: ProcessMatcher = (
            ContainerMatcher(endpoints.server_containers or {})
            if kind == "compose"
            else PidMatcher(endpoints.server_pids or {})
        )
        sampler = GpuSampler(matcher, interval_s=config.gpu_sample_interval_s)
        sampler.baseline()
        sampler.start()
        time.sleep(1.0)
        reading = sampler.stop()
        roles = ["flint", "jeff"] if endpoints.jeff_url else ["flint"]
        checks += [memory_against_buffers(r, reading.peak_role_mib.get(r), servers.role_log(r)) for r in roles]
    except BenchError as e:
        checks.append(Check("servers on the GPU", "FAIL", str(e).splitlines()[0]))
    finally:
        servers.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if kind == "compose":
        left = compose_containers_left()
        status = "ok" if checks[-1].status == "ok" and not left else "FAIL"
        checks.append(Check("compose with GPU reservation", status, f"up, on the GPU, down; {left or 'none'} left"))
    else:
        checks.append(Check("compose with GPU reservation", "skipped", "no NVIDIA Container Toolkit"))
    return checks


def compose_containers_left() -> str:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={COMPOSE_PROJECT}"],
        capture_output=True,
        text=True,
    )
    return " ".join(found.stdout.split())


def check_real_run(config_path: str, ctx: int) -> Check:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "results" / f"gpu-check-{stamp}.csv"
    cmd = [sys.executable, "-m", "bench", "run", "--config", config_path, "--ctx", str(ctx), "--reps", "1",
           "--presets", "part3", "--fixtures", "todo_repo", "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT)
    rows = read_rows(out) if out.exists() else []
    if done.returncode != 0 or not rows:
        return Check(f"one run at ctx {ctx}", "FAIL", f"`python -m bench run` exited {done.returncode}; see above")
    row = rows[0]
    detail = (
        f"{row['flint_model']} + {row['jeff_model']}, {row['servers']}: {row['stop_reason']}, "
        f"GPU peak flint {row['peak_gpu_mib_flint'] or '-'} / jeff {row['peak_gpu_mib_jeff'] or '-'} MiB; {out.name}"
    )
    measured = row["stop_reason"] != "infra_error" and row["peak_gpu_mib_flint"] != ""
    return Check(
        f"one run at ctx {ctx}", "ok" if measured else "FAIL", detail + ("" if measured else f"; {row['error']}")
    )


def table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in [*checks, Check("check", "", "")])
    lines = [f"{'check':<{width}}  {'result':<7}  detail", f"{'-' * width}  -------  ------"]
    lines += [f"{c.name:<{width}}  {c.status:<7}  {c.detail}" for c in checks]
    return "\n".join(lines)


def command(config: BenchConfig, config_path: str) -> int:
    """`python -m bench gpu-check`: the checks at the settings' (first) window; the real run reads `config_path`."""
    ctx = config.ctx[0]
    checks = [check_nvml()]
    if checks[0].status == "ok":
        checks.append(check_sampler_cost(config))
        checks += check_servers(config, ctx)
        checks.append(check_real_run(config_path, ctx))
    print(table(checks))
    return 1 if any(c.status == "FAIL" for c in checks) else 0
