"""One real kernel of a llama-server image on the card, for `make gpu-check`: what the image's build says (its CUDA,
its kernels' compression) is a prediction; whether the card's driver loads its kernels is only known by running one.
It also settles what no label can: whether the NVIDIA Container Toolkit gave the container its forward-compatible
driver library (bench/llama/cuda_compat.py).

The image's llama-server loads a tiny model with every layer offloaded (its load runs a warm-up batch on the
device), then answers one completion from inside the container; a server that exits instead, or a completion that
fails, is the failure with the line of its log that says why (`CUDA error: device kernel image is invalid`).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.containers.engine import LOG_CONFIG, role_labels
from bench.llama.load_errors import telling_line, why_it_died

LOADED = "model loaded"  # llama-server's log line once the model is loaded and warmed up
COMPLETION = json.dumps({"prompt": "1 2 3", "n_predict": 4})


@dataclass(frozen=True)
class KernelResult:
    ran: bool
    detail: str


def run_kernel(
    client: Any, image: str, model: Path, device_requests: list[Any] | None, timeout_s: float = 180.0
) -> KernelResult:
    """Start `image`'s llama-server on `model` (offloaded to the cards `device_requests` name; None: no card, as on a
    CPU image), ask it one completion, and remove the container."""
    container = client.containers.run(
        image,
        command=["-m", "/model.gguf", "-ngl", "99", "-c", "512", "--port", "8080", "--no-webui"],
        volumes={str(model.resolve()): {"bind": "/model.gguf", "mode": "ro"}},
        device_requests=device_requests,
        labels=role_labels("kernel-check"),
        log_config=LOG_CONFIG,
        detach=True,
    )
    try:
        return await_kernel(container, timeout_s)
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


def await_kernel(container: Any, timeout_s: float) -> KernelResult:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        container.reload()
        log = container.logs().decode(errors="replace")
        if container.status in ("exited", "dead"):
            code = container.attrs.get("State", {}).get("ExitCode")
            return KernelResult(False, failed(f"exited with status {code} while loading", log))
        if LOADED in log:
            return ask_completion(container)
        time.sleep(0.5)
    return KernelResult(False, f"not loaded after {timeout_s:.0f} s; its log says: {telling_line(log)}")


def ask_completion(container: Any) -> KernelResult:
    curl = ["curl", "-fsS", "--max-time", "60", "-d", COMPLETION, "http://localhost:8080/completion"]
    code, out = container.exec_run(curl)
    text = out.decode(errors="replace") if out else ""
    with contextlib.suppress(ValueError, AttributeError):
        tokens = json.loads(text).get("tokens_predicted")
        if code == 0 and tokens:
            return KernelResult(True, f"loaded with every layer offloaded and predicted {tokens} tokens")
    container.reload()
    return KernelResult(False, failed(f"its completion failed ({text.strip()[:200]})", container.logs().decode()))


def failed(what: str, log: str) -> str:
    return f"{what}: {why_it_died(log)}"
