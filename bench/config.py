"""bench.yaml plus command-line overrides -> BenchConfig: every key typed and range-checked at load time.

A wrong key, type or range is one line naming the key, the value and what is allowed (ConfigError), never a
traceback, never a failure mid-bench. Preset names come from the agent itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench.environment import from_environment
from bench.errors import ConfigError
from bench.setting_types import (
    DEFAULT_CTX,
    AgentName,
    CpuModelName,
    Ctx,
    Device,
    DockerSize,
    FlintServerArgs,
    GpuDevices,
    HubReference,
    JeffServerArgs,
    Names,
    Preset,
    SandboxKind,
    Seconds,
    ServerKind,
    Shard,
    SpaceSize,
    Url,
    size_bytes,
)
from bench.yaml_file import describe, read_mapping, reason


@dataclass(frozen=True)
class Choice:
    """What an `auto` setting resolved to, and why (printed at the start of a bench)."""

    kind: str
    reason: str


class Group(BaseModel):
    """One block of the matrix: every fixture x preset x ctx in it runs `reps` times."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    presets: Annotated[list[Preset], Field(min_length=1)]
    """Agent presets of this block."""
    ctx: Annotated[list[Ctx], Field(min_length=1)]
    """Flint's context sizes of this block, in tokens."""
    fixtures: Names | None = None
    """Fixture names of this block; None: the config's fixtures."""


class BenchConfig(BaseModel):
    """The settings of one bench. Field docstrings are the reference: docs/config.md is made from them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    fixtures: Names = ["todo_repo"]
    """Fixture names under fixtures/ of the fixtures root."""
    fixtures_root: str = ""
    """The folder that holds fixtures/<name>/ and hidden_tests/<name>/ (your own tasks, kept outside the checkout,
    e.g. written by `bench fixtures import`); "": the checkout's own."""
    presets: Annotated[list[Preset], Field(min_length=1)] = ["part3"]
    """Agent presets (the agent's own: part2, clearing, part3, strict, ...)."""
    ctx: Annotated[list[Ctx], Field(min_length=1)] = [DEFAULT_CTX]
    """Flint's context sizes in tokens."""
    # The agents block (bench/agents/).
    agents: Annotated[list[AgentName], Field(min_length=1)] = ["article"]
    """Agent kinds to run (`bench agents` lists them): `article` runs each of `presets`; any other agent runs once per
    fixture and window (it has no presets). The matrix is fixtures x (the article's presets, other agents) x ctx."""
    groups: list[Group] = []
    """Explicit matrix blocks; given (and no --ctx/--presets override), they replace fixtures x presets x ctx."""
    reps: Annotated[int, Field(ge=1, le=1000)] = 1
    """Runs per (fixture, preset, ctx)."""
    max_steps: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Step limit per run; None: each fixture's own (fixture.yaml max_steps)."""
    sandbox: SandboxKind = "auto"
    """docker (throwaway container), podman (the same, in podman), local (temp dir), or auto (docker when its engine
    answers, else podman when its API does, else local)."""
    servers: ServerKind = "auto"
    """compose, embedded (host llama-server), external (URLs), or auto (see bench.run.choices)."""
    out: Annotated[str, Field(min_length=1)] | None = None
    """Results CSV; None: results/<date>-<git sha>.csv."""
    resume: bool = False
    """Skip runs already in `out` with the same inputs."""
    keep: Annotated[int, Field(ge=0, le=1000)] = 2
    """Agent --keep: newest tool results never cleared."""
    clear_at: Annotated[float, Field(gt=0, le=1)] = 0.5
    """Agent --clear-at: fraction of the window past which old material is cleared."""
    sampling: dict[str, float | int | str | bool | None] = {"temperature": 0.0, "seed": 42}
    """Fields merged into every request to Flint (agent --sampling)."""
    use_jeff: bool = True
    """Ask Jeff for an opinion on each shell command."""
    jeff_steps: Annotated[int, Field(ge=0, le=1000)] = 3
    """Agent --jeff-steps: in preset jeff-first, the steps Jeff takes before Flint takes over (K; he may hand over
    sooner). Recorded in the rows of jeff-first runs (jeff_first_steps)."""
    agent_retries: Annotated[int, Field(ge=0, le=20)] = 4
    """Agent --retries: how often a failed request to a server is retried before the run ends server_error."""
    agent_retry_delay_s: Annotated[float, Field(ge=0, le=600)] = 1.0
    """Agent --retry-delay: the first backoff in seconds, doubling with each retry."""
    request_timeout_s: Seconds = 900.0
    """Agent --request-timeout: the longest a request to Flint may take (a long answer on a slow GPU)."""
    jeff_timeout_s: Seconds = 10.0
    """Agent --jeff-timeout: the longest Jeff may take for an opinion (a silent Jeff's cost per command)."""
    run_timeout_s: Seconds = 1800.0
    """A run still going after this long is killed and recorded as an infrastructure failure."""
    grading_overlap: bool = True
    """Grade a run while the next runs (rows in run order: docs/running.md); false: before the next."""
    server_start_timeout_s: Seconds = 600.0
    """How long a llama-server may take to become healthy (large GPU models load slowly)."""
    jeff_ctx: Ctx = DEFAULT_CTX
    """Jeff's context size."""
    jeff_conversation_ctx: Ctx | None = None
    """Jeff's window where he reads the conversation (docs/agent.md); None: ctx."""
    models_dir: Annotated[str, Field(min_length=1)] = "./models"
    """compose servers: host folder with the GGUF files (mounted read-only at /models)."""
    flint_model: str = ""
    """compose servers on GPU: Flint's GGUF file name in models_dir."""
    jeff_model: str = ""
    """compose servers on GPU: Jeff's GGUF file name in models_dir."""
    llama_image: Annotated[str, Field(min_length=1)] = "agentbench/llama-cuda:cu12.9-b11434"
    """compose servers on GPU: the llama-server image; the default is built here from the pinned llama.cpp source
    (`make gpu-image`, bench/llama/cuda_image.py); another tag must exist (rows note a build mismatch)."""
    gpu_device: Device = "0"
    """The card (nvidia-smi index, GPU- or MIG- UUID) both servers of a pair use, host processes and compose alike;
    the sampler watches it (bench/llama/gpu_pin.py)."""
    gpu_sample_interval_s: Annotated[float, Field(ge=0.01, le=10)] = 0.1
    """NVML sampling interval (its measured CPU cost: docs/gpu.md)."""
    flint_url: Url | None = None
    """external servers: Flint's URL (default $FLINT_URL)."""
    jeff_url: Url | None = None
    """external servers: Jeff's URL (default $JEFF_URL)."""
    threads: Annotated[int, Field(ge=1, le=1024)] | None = None
    """llama-server -t of the servers the bench starts (None: all cores but one for embedded and CPU compose servers,
    the container's CPU limit for the Kubernetes sidecars, llama.cpp's own default for GPU compose servers)."""
    flint_tools: Literal["auto", "forced", "fenced", "native"] = "auto"
    """How Flint is served: forced (every answer one tool call: bench/llama/forced_tools.py), fenced (the project's
    template docker/flint-fenced/flint.jinja, whose tool calls are ```json fences: llama.cpp's own parser reads the
    model's calls), native (the model's own template, or yours: --chat-template-file in flint_server_args), or auto
    (on a CPU serving cpu_model: forced for smollm2, fenced for the Qwen models; native anywhere else)."""
    sandbox_memory: DockerSize = "2g"
    """docker sandbox memory limit (a docker size: 2g, 512m)."""
    sandbox_cpus: Annotated[float, Field(gt=0, le=1024)] = 2.0
    """docker sandbox CPU limit."""
    sandbox_pids: Annotated[int, Field(ge=16, le=1 << 20)] = 256
    """docker sandbox process limit."""
    sandbox_repo_size: SpaceSize = "512m"
    """docker sandbox: the size of the tmpfs holding the agent's repository; writes past it fail (no space left).
    Its pages count against sandbox_memory, so it may be at most half of that (room for the agent to run)."""
    diff_limit: SpaceSize = "16m"
    """The largest diff of the agent's changes kept; a larger one is noted in `error` and the run is not graded."""
    flint_hf: HubReference = "ggml-org/gpt-oss-20b-GGUF:mxfp4"
    """Flint as a hub reference OWNER/REPO[:QUANT] that llama-server fetches (-hf) when flint_model is empty."""
    jeff_hf: HubReference = "ggml-org/Qwen3-0.6B-GGUF:Q8_0"
    """Jeff as a hub reference that llama-server fetches itself (-hf) when jeff_model is empty."""
    model_cache: str = ""
    """Host folder for fetched models, shared by every server the bench starts: "" is llama.cpp's own choice
    ($LLAMA_CACHE, $HF_HUB_CACHE, $HF_HOME/hub, ..., ~/.cache/huggingface/hub)."""
    cpu_models: Literal["small", "configured"] = "small"
    """Servers on the CPU (embedded without a GPU build, compose's cpu profile): small (the small model as Flint and
    Jeff) or configured (the models above, as on a GPU)."""
    cpu_model: CpuModelName = "smollm2"
    """Flint's model on the CPU (with cpu_models: small): smollm2 (forced to call tools), qwen2.5-coder-0.5b or
    qwen2.5-coder-1.5b (bench/llama/cpu_models.py: its own tool calls). Costs: docs/running.md."""
    jeff_cpu_model: CpuModelName = "smollm2"
    """Jeff's model on the CPU, as cpu_model (embedded servers)."""
    flint_server_args: FlintServerArgs = []
    """llama-server flags of your own for Flint (e.g. `-fa on -ctk q8_0 --cache-reuse 256`): a list, or one line
    split as a shell would. Flags the bench sets itself (model, window, host, port, slots, ...) are refused, naming
    the setting to use; the rows record the list and key comparisons on it. External servers: recorded, not passed."""
    jeff_server_args: JeffServerArgs = []
    """llama-server flags of your own for Jeff, as flint_server_args."""

    server_stall_limit_s: Annotated[float, Field(ge=0, le=24 * 3600)] = 10.0
    """Seconds a run may lose to servers not computing (server_stall_s) and still count; above, it is infra_error."""
    server_wait_s: Annotated[float, Field(ge=0, le=24 * 3600)] = 180.0
    """external and compose servers: how long the bench waits for a server that stopped answering (a restart by its
    supervisor, the kubelet, Docker) before it books the run it cut short as infra_error; once the server answers
    again, that run runs again. 0: no wait (the run is infra_error at once). Embedded servers are restarted instead."""

    # Scale-out: a part of the plan (bench/run/shards.py), and several server pairs at once (bench/run/workers.py).
    shard: Shard | None = None
    """`I/N` (1-based): run the I-th of N deterministic parts of the plan, into a file of its own."""
    servers_shared: bool = False
    """The servers also serve the matrix's other shards, one shard at a time (`bench submit slurm --share-servers`
    sets it); each row says so."""
    workers: Annotated[int, Field(ge=1, le=64)] = 1
    """Server pairs side by side, each taking runs from one queue (on the CPU: embedded pairs sharing the cores)."""
    gpu_devices: GpuDevices = None
    """One worker per GPU: `all` (every GPU NVML lists) or a list of indices or UUIDs; each pair pinned to its card."""

    @model_validator(mode="after")
    def _repo_fits_in_memory(self) -> BenchConfig:
        if size_bytes(self.sandbox_repo_size) * 2 > size_bytes(self.sandbox_memory):
            raise ValueError(
                f"sandbox_repo_size {self.sandbox_repo_size} is more than half of sandbox_memory "
                f"{self.sandbox_memory}: the repository's tmpfs counts against the sandbox's memory; lower it"
            )
        return self

    @model_validator(mode="after")
    def _one_way_to_scale(self) -> BenchConfig:
        if self.gpu_devices is not None and self.workers != 1:
            raise ValueError("set workers or gpu_devices, not both: gpu_devices runs one worker per GPU it names")
        if self.servers == "external" and (self.workers > 1 or self.gpu_devices is not None):
            raise ValueError(
                "external servers are one pair: run one bench (or one --shard) per pair instead of workers"
            )
        return self

    @model_validator(mode="after")
    def _servers_can_be_found(self) -> BenchConfig:
        if self.servers == "external" and not self.flint_url:
            raise ValueError("--servers external needs Flint's URL: pass --flint-url or set FLINT_URL")
        return self

    def matrix(self) -> list[tuple[str, str, int]]:
        """(fixture, preset, ctx) triples in run order, without repetitions."""
        blocks = self.groups or [Group(presets=self.presets, ctx=self.ctx)]
        triples: list[tuple[str, str, int]] = []
        for block in blocks:
            for triple in itertools.product(block.fixtures or self.fixtures, block.presets, block.ctx):
                if triple not in triples:
                    triples.append(triple)
        return triples


SETTINGS = tuple(BenchConfig.model_fields)


def load_config(path: Path | None, overrides: dict[str, Any]) -> BenchConfig:
    """The settings, each from the first place that sets it: `overrides` (the command line; None is not given), the
    environment (bench.environment: AGENTBENCH_<KEY> and the older aliases), `path` (bench.yaml), the defaults."""
    source = str(path) if path is not None else "the defaults"
    data = read_mapping(path, "bench settings") if path is not None else {}
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in {source}; known: {', '.join(SETTINGS)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    environment = {k: v for k, v in from_environment(BenchConfig.model_fields).items() if k not in given}
    explicit = given.keys() | environment.keys()
    if ("ctx" in explicit or "presets" in explicit) and "groups" not in explicit:
        data["groups"] = []  # an explicit ctx or presets asks for exactly that matrix
    data.update({key: found.value for key, found in environment.items()})
    data.update(given)
    try:
        return BenchConfig.model_validate(data)
    except ValidationError as e:
        key = str(e.errors()[0]["loc"][0]) if e.errors()[0]["loc"] else ""
        where = f"${environment[key].variable}" if key in environment else source
        if key in given:  # said in the user's own spelling by the command line's reader (bench/cli/options.py)
            raise ConfigError(f"the command line: {describe(e)}", setting=key, reason=reason(e)) from None
        raise ConfigError(f"{where}: {describe(e)}") from None
