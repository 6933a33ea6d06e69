"""bench.yaml plus command-line overrides -> BenchConfig, validated strictly (a mistyped key fails at load time)."""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.errors import ConfigError

PRESETS = ("part2", "clearing", "part3", "strict")
SANDBOXES = ("auto", "docker", "local")
SERVER_KINDS = ("auto", "compose", "embedded", "external")


@dataclass(frozen=True)
class Group:
    """One block of the matrix: every fixture x preset x ctx in it runs `reps` times."""

    presets: list[str]
    ctx: list[int]
    fixtures: list[str] | None = None  # None: the config's fixtures


@dataclass(frozen=True)
class BenchConfig:
    fixtures: list[str] = field(default_factory=lambda: ["todo_repo"])
    """Fixture names under fixtures/."""
    presets: list[str] = field(default_factory=lambda: ["part3"])
    """Agent presets (part2, clearing, part3, strict)."""
    ctx: list[int] = field(default_factory=lambda: [4096])
    """Flint's context sizes in tokens."""
    groups: list[Group] = field(default_factory=list)
    """Explicit matrix blocks; when given (and no --ctx/--presets override), they replace fixtures x presets x ctx."""
    reps: int = 1
    """Runs per (fixture, preset, ctx)."""
    max_steps: int | None = None
    """Step limit per run; None: each fixture's own (fixture.yaml max_steps)."""
    sandbox: str = "auto"
    """docker (throwaway container), local (temp dir), or auto (docker when the engine answers)."""
    servers: str = "auto"
    """compose, embedded (host llama-server on CPU), external (URLs), or auto (compose with Docker + NVIDIA GPU)."""
    out: str | None = None
    """Results CSV; None: results/<date>-<git sha>.csv."""
    resume: bool = False
    """Skip runs already in `out` with the same inputs."""
    keep: int = 2
    """Agent --keep: newest tool results never cleared."""
    clear_at: float = 0.5
    """Agent --clear-at: fraction of the window past which old material is cleared."""
    sampling: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.0, "seed": 42})
    """Fields merged into every request to Flint (agent --sampling)."""
    use_jeff: bool = True
    """Ask Jeff for an opinion on each shell command."""
    agent_retries: int = 4
    """Agent --retries: how often a failed request to a server is retried before the run stops server_error."""
    agent_retry_delay_s: float = 1.0
    """Agent --retry-delay: the first backoff in seconds, doubling with each retry."""
    run_timeout_s: float = 1800.0
    """A run still going after this long is killed and recorded as an infrastructure failure."""
    server_start_timeout_s: float = 600.0
    """How long a llama-server may take to become healthy (large GPU models load slowly)."""
    jeff_ctx: int = 4096
    """Jeff's context size."""
    models_dir: str = "./models"
    """compose servers: host folder with the GGUF files (mounted read-only at /models)."""
    flint_model: str = ""
    """compose servers on GPU: Flint's GGUF file name in models_dir."""
    jeff_model: str = ""
    """compose servers on GPU: Jeff's GGUF file name in models_dir."""
    llama_image: str = "ghcr.io/ggml-org/llama.cpp:server-cuda"
    """compose servers on GPU: the llama-server image; pin a -bNNNN tag for reproducible results."""
    gpu_device: str = "0"
    """compose servers on GPU: the device (index or UUID) both servers use; the sampler watches it."""
    gpu_sample_interval_s: float = 0.1
    """NVML sampling interval (see docs/gpu.md for its measured CPU cost)."""
    flint_url: str | None = None
    """external servers: Flint's URL (default $FLINT_URL)."""
    jeff_url: str | None = None
    """external servers: Jeff's URL (default $JEFF_URL)."""
    threads: int | None = None
    """embedded servers: llama-server -t (None: all cores but one)."""
    sandbox_memory: str = "2g"
    """docker sandbox memory limit."""
    sandbox_cpus: float = 2.0
    """docker sandbox CPU limit."""
    sandbox_pids: int = 256
    """docker sandbox process limit."""

    def matrix(self) -> list[tuple[str, str, int]]:
        """(fixture, preset, ctx) triples in run order, without repetitions."""
        blocks = self.groups or [Group(presets=self.presets, ctx=self.ctx)]
        triples: list[tuple[str, str, int]] = []
        for block in blocks:
            for triple in itertools.product(block.fixtures or self.fixtures, block.presets, block.ctx):
                if triple not in triples:
                    triples.append(triple)
        return triples


# Settings that the environment variables of compose.yaml (and .env.example) override when they are set.
ENVIRONMENT_OVERRIDES = {
    "models_dir": "MODELS_DIR",
    "flint_model": "FLINT_MODEL",
    "jeff_model": "JEFF_MODEL",
    "llama_image": "LLAMA_IMAGE",
    "gpu_device": "GPU_DEVICE",
}

FIELD_TYPES = {f.name: f.type for f in dataclasses.fields(BenchConfig)}


def _check_list(key: str, value: Any, item: type) -> None:
    if not isinstance(value, list) or not value or not all(isinstance(v, item) for v in value):
        raise ConfigError(f"{key} must be a non-empty list of {item.__name__}, got {value!r}")


def _parse_groups(raw: Any) -> list[Group]:
    if not isinstance(raw, list):
        raise ConfigError(f"groups must be a list of {{presets, ctx, fixtures?}} blocks, got {raw!r}")
    groups = []
    for block in raw:
        if not isinstance(block, dict) or set(block) - {"presets", "ctx", "fixtures"} or "presets" not in block:
            raise ConfigError(f"each group needs presets and ctx (and may name fixtures), got {block!r}")
        groups.append(Group(presets=block["presets"], ctx=block["ctx"], fixtures=block.get("fixtures")))
    return groups


def validate(config: BenchConfig) -> BenchConfig:
    _check_list("fixtures", config.fixtures, str)
    for block in config.groups or [Group(presets=config.presets, ctx=config.ctx)]:
        _check_list("presets", block.presets, str)
        _check_list("ctx", block.ctx, int)
        if block.fixtures is not None:
            _check_list("fixtures", block.fixtures, str)
        unknown = [p for p in block.presets if p not in PRESETS]
        if unknown:
            raise ConfigError(f"unknown preset {unknown[0]!r}: choose from {', '.join(PRESETS)}")
        if any(c < 256 for c in block.ctx):
            raise ConfigError(f"ctx values must be at least 256 tokens, got {block.ctx}")
    if config.sandbox not in SANDBOXES:
        raise ConfigError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {config.sandbox!r}")
    if config.servers not in SERVER_KINDS:
        raise ConfigError(f"servers must be one of {', '.join(SERVER_KINDS)}, got {config.servers!r}")
    if config.reps < 1 or (config.max_steps is not None and config.max_steps < 1):
        raise ConfigError("reps and max_steps must be at least 1")
    if not 0 < config.clear_at <= 1:
        raise ConfigError(f"clear_at must be in (0, 1], got {config.clear_at}")
    if not isinstance(config.sampling, dict):
        raise ConfigError(f"sampling must be a mapping of request fields, got {config.sampling!r}")
    return config


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}; pass --config with an existing file") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {str(e).splitlines()[0]}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings")
    return data


def load_config(path: Path | None, overrides: dict[str, Any]) -> BenchConfig:
    """Settings from `path` (if it exists or was named), then `overrides` whose value is not None."""
    data = read_yaml(path) if path is not None else {}
    unknown = sorted(set(data) - set(FIELD_TYPES))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in {path}; known: {', '.join(sorted(FIELD_TYPES))}")
    if "groups" in data:
        data["groups"] = _parse_groups(data["groups"])
    given = {k: v for k, v in overrides.items() if v is not None}
    if "ctx" in given or "presets" in given:
        data["groups"] = []  # an explicit --ctx/--presets asks for exactly that matrix
    data.update(given)
    data.setdefault("flint_url", os.environ.get("FLINT_URL"))
    data.setdefault("jeff_url", os.environ.get("JEFF_URL"))
    for key, variable in ENVIRONMENT_OVERRIDES.items():  # the variables compose.yaml reads, when set, win
        if os.environ.get(variable) and key not in given:
            data[key] = os.environ[variable]
    try:
        config = BenchConfig(**data)
    except TypeError as e:
        raise ConfigError(f"bad settings in {path}: {e}") from e
    return validate(config)
