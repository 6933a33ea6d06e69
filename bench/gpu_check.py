"""`python -m bench gpu-check` (make gpu-check): once on a GPU host, check what the bench measures there.

1. NVML starts and lists the GPUs; the driver's version and the newest CUDA it runs.
2. The builds against that driver: the CUDA of the GPU image (compose) and of a `make setup GPU=cuda` build, whether
   the image has native code for these GPUs (PTX alone needs a driver at least as new as its compiler), and how
   their kernels are compressed (llama.cpp's default from CUDA 12.8 needs driver 550.54.14: cuda_compat.py).
3. The sampler's CPU cost at the configured interval (target: 2% of one core, as in perf/gpu_sampler.py).
4. The servers `servers: auto` picks, on the pinned card, with the configured models (the image built and the models
   fetched once, under their locks and checked, before they start, as a bench does): for each, NVML's per-process
   figure at rest and across a request that fills most of the window, against the buffers its log names and the
   breakdown it prints at exit, with the allowed excess measured (bench/llama/memory_check.py). Under its own
   compose project, so a user's `make up` servers are never touched.
   On compose, then one kernel of the image on the card (bench/llama/kernel_check.py): the build's labels predict,
   the kernel tells (a forward-compatible driver library the Container Toolkit may give the container included).
5. One real run at --ctx (default: the settings' first window) with the configured models, via `python -m bench run`.

It prints one table and exits 1 when a check failed (a check that does not apply to this host is skipped).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_or_none
from bench.containers.images import image_exists
from bench.containers.names import BenchNames
from bench.errors import BenchError
from bench.llama.cuda_compat import compression_of, driver_cuda, parse_cuda, runs_on
from bench.llama.cuda_image import image_compression, image_cuda, native_for
from bench.llama.cuda_libs import host_build_compression, host_build_cuda
from bench.llama.gpu_cards import check_cards
from bench.llama.gpu_pin import resolve_pin
from bench.llama.kernel_check import run_kernel
from bench.llama.memory_check import ServerMemory, bare_context_mib, compare
from bench.llama.warmup import window_request
from bench.measure.cost import SamplerCost, measure_sampler_cost
from bench.measure.nvml import start_nvml
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher
from bench.measure.sampler import GpuSampler
from bench.ownership import Ownership
from bench.rehearsal.tiny_model import write_tiny_model
from bench.results.append import read_rows
from bench.servers.choose import llama_backend, probe_host, where_servers_run
from bench.servers.compose import make_compose_servers
from bench.servers.embedded import EmbeddedServers
from bench.servers.kinds import KINDS
from bench.servers.shared import Shared

__all__ = ["SamplerCost", "measure_sampler_cost"]  # perf/gpu_sampler.py measures the same way
SAMPLER_SECONDS = 5.0
SAMPLER_TARGET_PERCENT = 2.0
VERBOSE_LOG = {"LLAMA_ARG_LOG_VERBOSITY": "4"}  # llama.cpp logs its buffers and breakdown from verbosity 4


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
        driver, cuda = driver_cuda(nvml)
    finally:
        nvml.nvmlShutdown()
    if not names:
        return Check("NVML", "FAIL", "NVML started but sees no GPU")
    return Check("NVML", "ok", f"driver {driver} (CUDA {cuda[0]}.{cuda[1]}): {', '.join(str(n) for n in names)}")


@dataclass(frozen=True)
class Driver:
    version: str  # "535.183.01"
    cuda: tuple[int, int]  # the newest CUDA it runs


def build_runs(what: str, build_cuda: str, driver: Driver, native: bool | None, compression: str) -> Check:
    """One build's CUDA and kernel compression against the driver."""
    version = parse_cuda(build_cuda)
    if version is None:
        return Check(what, "skipped", f"its CUDA version is unknown ({build_cuda or 'not recorded'})")
    why = runs_on(
        version, driver.cuda, ptx_only=native is False, compression=compression, driver_version=driver.version
    )
    code = {True: "native code for these GPUs", False: "PTX only for these GPUs", None: "architectures unknown"}
    packed = f"-compress-mode={compression_of(version, compression or None)}"
    runs = f"driver {driver.version} runs CUDA {driver.cuda[0]}.{driver.cuda[1]}"
    detail = f"CUDA {build_cuda}, {code[native]}, {packed}; {runs}"
    return Check(what, "FAIL" if why else "ok", f"{why}; {detail}" if why else detail)


def check_builds(config: BenchConfig, client: Any) -> list[Check]:
    nvml, _ = start_nvml()
    if nvml is None:
        return []
    try:
        driver = Driver(*driver_cuda(nvml))
        handle = nvml.nvmlDeviceGetHandleByIndex(0)
        capability = tuple(nvml.nvmlDeviceGetCudaComputeCapability(handle))
    finally:
        nvml.nvmlShutdown()
    checks = []
    if client is not None:
        cuda = image_cuda(client, config.llama_image)
        native = native_for(client, config.llama_image, (capability[0], capability[1]))
        compression = image_compression(client, config.llama_image)
        checks.append(build_runs(f"image {config.llama_image}", cuda, driver, native, compression=compression))
    host = host_build_cuda() if llama_backend() == "cuda" else ""
    if host:
        what = "host CUDA build (make setup GPU=cuda)"
        checks.append(build_runs(what, host, driver, native=True, compression=host_build_compression()))
    return checks


def check_image_kernel(config: BenchConfig, client: Any) -> Check:
    """The image's own llama-server runs a kernel on the pinned card: the build's CUDA and compression predict it
    (check_builds); only this says whether the driver, and any forward-compatible library the Container Toolkit
    gives the container, loads its kernels."""
    import docker.types

    what = f"image kernel on the card ({config.llama_image})"
    if client is None or not image_exists(client, config.llama_image):
        return Check(what, "skipped", "no Docker engine, or the image is not here (make gpu-image)")
    device = resolve_pin(config.gpu_device).device
    request = docker.types.DeviceRequest(device_ids=[device], capabilities=[["gpu"]])
    with tempfile.TemporaryDirectory() as folder:
        model = write_tiny_model(Path(folder) / "tiny.gguf")
        result = run_kernel(client, config.llama_image, model, [request])
    return Check(what, "ok" if result.ran else "FAIL", f"{device}: {result.detail}")


def settled(checks: list[Check], kernel: Check) -> list[Check]:
    """The image's build row predicts from its labels; where one kernel of the image ran on the card, the image runs on
    this host whatever they predicted (the Container Toolkit's forward-compatible driver library, on data-center
    cards, loads kernels the driver alone cannot), so that row says so instead of failing."""
    if kernel.status != "ok":
        return checks
    ran = "its kernel ran on the card all the same (a forward-compatible driver library in the container)"
    return [_overruled(c, ran) if c.name.startswith("image ") and c.status == "FAIL" else c for c in checks]


def _overruled(check: Check, ran: str) -> Check:
    return Check(check.name, "ok", f"predicted: {check.detail}; {ran}")


def check_sampler_cost(config: BenchConfig) -> Check:
    cost = measure_sampler_cost(config.gpu_sample_interval_s, SAMPLER_SECONDS)
    if not cost.measured:
        return Check("sampler CPU cost", "FAIL", f"the sampler measured nothing: {cost.method}")
    detail = f"{cost.cpu_percent:.2f}% of one core at {config.gpu_sample_interval_s} s ({cost.samples_per_s:.1f}/s)"
    status = "ok" if cost.cpu_percent <= SAMPLER_TARGET_PERCENT else "FAIL"
    return Check("sampler CPU cost", status, f"{detail}; target {SAMPLER_TARGET_PERCENT}%")


@contextlib.contextmanager
def verbose_servers() -> Any:
    saved = {key: os.environ.get(key) for key in VERBOSE_LOG}
    os.environ.update(VERBOSE_LOG)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def check_servers(config: BenchConfig, ctx: int) -> list[Check]:
    client = docker_or_none()
    names = BenchNames(Ownership.new().instance)  # a compose project of its own, never `make up`'s
    try:
        host = probe_host(client)  # the one look at the host
        kind, reason = where_servers_run(host)
        # the image and the models once, under their locks and checked, as a bench makes them before its servers
        KINDS[kind].prepare(Shared(config, host, client, ROOT))
        servers: Any = (
            make_compose_servers(config, client, gpu=True, names=names, checkout=ROOT)
            if kind == "compose"
            else EmbeddedServers(config, ROOT / "results" / "gpu-check", gpu=bool(host.llama_gpus), checkout=ROOT)
        )
    except BenchError as e:  # a CUDA build that sees no GPU, a GPU image that cannot be had
        return [Check("servers", "FAIL", str(e))]
    if kind != "compose" and not servers.gpu:
        return [Check("servers", "FAIL", reason), Check("compose with GPU reservation", "skipped", "no toolkit")]
    checks = [Check("servers", "ok", f"{kind}: {reason}")]
    try:
        checks += memory_checks(config, servers, kind == "compose", ctx)
    except (BenchError, OSError) as e:
        checks.append(Check("servers on the GPU", "FAIL", str(e).splitlines()[0]))
    finally:
        servers.stop()
    if kind == "compose":
        left = compose_containers_left(names.compose_project)
        status = "ok" if checks[-1].status == "ok" and not left else "FAIL"
        detail = f"project {names.compose_project}: up, on the GPU, down; {left or 'none'} left"
        checks.append(Check("compose with GPU reservation", status, detail))
    else:
        checks.append(Check("compose with GPU reservation", "skipped", "no NVIDIA Container Toolkit"))
    return checks


def memory_checks(config: BenchConfig, servers: Any, compose: bool, ctx: int) -> list[Check]:
    """The servers started at `ctx`, each given a window-filling request while sampled, then stopped: each one's
    memory as NVML saw it against what its own log says it allocated."""
    pin = resolve_pin(config.gpu_device)
    context = bare_context_mib(pin.device, config.gpu_sample_interval_s, ROOT)
    with verbose_servers():
        endpoints = servers.start(ctx)
    matcher: ProcessMatcher = (
        ContainerMatcher(endpoints.server_containers or {}) if compose else PidMatcher(endpoints.server_pids or {})
    )
    sampler = GpuSampler(matcher, device_uuids=pin.sampler_uuids(), interval_s=config.gpu_sample_interval_s)
    sampler.baseline()
    sampler.start()
    urls = {"flint": (endpoints.flint_url, ctx), "jeff": (endpoints.jeff_url, config.jeff_ctx)}
    for url, window in (v for v in urls.values() if v[0]):
        window_request(str(url), window)
    reading = sampler.stop()
    checks = []
    for role, log in servers.logs_after_stop().items():
        memory = ServerMemory.from_log(
            role=role,
            log=log,
            at_rest_mib=reading.baseline_role_mib.get(role),
            peak_mib=reading.peak_role_mib.get(role),
            context_mib=context,
        )
        status, detail = compare(memory)
        checks.append(Check(f"{role}: NVML vs llama.cpp", status, detail))
    return checks


def compose_containers_left(project: str) -> str:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True,
        text=True,
    )
    return " ".join(found.stdout.split())


def check_real_run(config_path: str, ctx: int) -> Check:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "results" / f"gpu-check-{stamp}.csv"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--config",
        config_path,
        "--ctx",
        str(ctx),
        "--reps",
        "1",
        "--presets",
        "part3",
        "--fixtures",
        "todo_repo",
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, cwd=ROOT)
    rows = read_rows(out) if out.exists() else []
    if done.returncode != 0 or not rows:
        return Check(f"one run at ctx {ctx}", "FAIL", f"`python -m bench run` exited {done.returncode}; see above")
    row = rows[0]
    detail = (
        f"{row['flint_model']} + {row['jeff_model']}, {row['servers']}: {row['stop_reason']}, "
        f"GPU peak flint {row['peak_gpu_mib_flint'] or '-'} / jeff {row['peak_gpu_mib_jeff'] or '-'} MiB "
        f"on {row['gpu_uuid'] or '?'}; {out.name}"
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
        check_cards([config.gpu_device], "gpu_device", named=True)  # a card the host lacks: one line, nothing run
        checks += check_builds(config, docker_or_none())
        checks.append(check_sampler_cost(config))
        checks += check_servers(config, ctx)
        if any(c.name == "servers" and c.detail.startswith("compose") for c in checks):
            kernel = check_image_kernel(config, docker_or_none())
            checks = [*settled(checks, kernel), kernel]
        checks.append(check_real_run(config_path, ctx))
    print(table(checks))
    return 1 if any(c.status == "FAIL" for c in checks) else 0
