"""Each default has one home in the code; the files users read or copy (compose.yaml, .env.example, bench.yaml)
repeat some of them, and must agree with that home."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bench import ROOT
from bench.config import BenchConfig
from bench.containers.images import DEFAULT_SANDBOX_BASE
from bench.llama.cpu_image import LLAMA_CPU_REPO
from bench.llama.forced_tools import NATIVE_DIR
from bench.llama.hub import cache_dir
from bench.servers.compose import UP_SANDBOX_INTERFACE
from bench.servers.updown import UP_PORTS
from bench.setting_types import DEFAULT_CTX

DEFAULT = BenchConfig()
LLAMA_CACHE = "~/" + cache_dir(environ={}).relative_to(Path.home()).as_posix()  # llama.cpp's own, with no variable
# compose.yaml's variables whose default is the same in every service, and where the bench keeps each.
COMPOSE_DEFAULTS = {
    "CTX": str(DEFAULT_CTX),
    "JEFF_CTX": str(DEFAULT.jeff_ctx),
    "LLAMA_IMAGE": DEFAULT.llama_image,
    "GPU_DEVICE": DEFAULT.gpu_device,
    "MODELS_DIR": DEFAULT.models_dir,
    "MODEL_CACHE": LLAMA_CACHE,
    "FLINT_PORT": str(UP_PORTS["FLINT_PORT"]),
    "JEFF_PORT": str(UP_PORTS["JEFF_PORT"]),
    "SANDBOX_INTERFACE": UP_SANDBOX_INTERFACE,
    "AGENTBENCH_BASE_IMAGE": DEFAULT_SANDBOX_BASE,
    "LLAMA_CPU_IMAGE": f"{LLAMA_CPU_REPO}:latest",
    "FLINT_SERVING_DIR": "./" + NATIVE_DIR.as_posix(),
    "LLAMA_UID": "0",  # root unless told: the bench passes its own uid, .env.example an example one
    "LLAMA_GID": "0",
    "CUDA_JIT_CACHE": "~/.cache/agent-bench/cuda-jit",  # the bench passes jit_cache(), the same folder
    "FLINT_SERVER_ARGS": "",  # the bench passes flint_server_args and jeff_server_args, empty by default
    "JEFF_SERVER_ARGS": "",
}
# The GPU services fetch the configured hub models; the cpu profile's files are what the bench mounts (-m).
GPU_MODELS = {"FLINT_FROM": "-hf", "FLINT_REF": DEFAULT.flint_hf, "JEFF_FROM": "-hf", "JEFF_REF": DEFAULT.jeff_hf}
VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")


def compose_defaults(service: str | None = None) -> dict[str, set[str]]:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    text = yaml.safe_dump(compose["services"][service] if service else compose, width=10_000)
    found: dict[str, set[str]] = {}
    for name, default in VARIABLE.findall(text):
        found.setdefault(name, set()).add(default)
    return found


def test_every_compose_default_agrees_with_the_bench() -> None:
    found = compose_defaults()
    shared = {name: defaults for name, defaults in found.items() if name not in GPU_MODELS}
    assert shared == {name: {value} for name, value in COMPOSE_DEFAULTS.items()}  # a new variable: add its home
    for service in ("flint", "jeff"):
        for name, defaults in compose_defaults(service).items():
            if name in GPU_MODELS:
                assert defaults == {GPU_MODELS[name]}, (service, name)


def test_env_example_lists_the_same_defaults() -> None:
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, rest = line.partition("=")
            values[name] = rest.split("#")[0].strip()
    examples = {"LLAMA_UID", "LLAMA_GID"}  # a user's own ids, shown as an example
    expected = {name: value for name, value in (COMPOSE_DEFAULTS | GPU_MODELS).items() if name not in examples}
    assert {name: value for name, value in values.items() if name not in examples} == expected


def test_bench_yaml_holds_only_settings_at_their_defaults() -> None:
    """bench.yaml is the page a user edits from: every setting in it is named as the config has it."""
    data = yaml.safe_load((ROOT / "bench.yaml").read_text())
    assert data, "bench.yaml is empty"
    differ = {key: (value, getattr(DEFAULT, key)) for key, value in data.items() if value != getattr(DEFAULT, key)}
    assert differ == {}
