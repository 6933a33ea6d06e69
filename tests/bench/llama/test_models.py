"""Which model each server serves: a named local file wins, else the hub reference; the small model on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ConfigError, PrerequisiteError
from bench.llama.hub import HubRef
from bench.llama.models import Models, configured_models, models_for
from bench.servers.compose import ComposeServers


def test_the_defaults_are_hub_references_fetched_by_llama_server() -> None:
    models = configured_models(BenchConfig())
    assert models == Models(HubRef("ggml-org/gpt-oss-20b-GGUF", "mxfp4"), HubRef("ggml-org/Qwen3-0.6B-GGUF", "Q8_0"))


def test_a_local_file_wins_over_the_hub_reference_of_its_role(tmp_path: Path) -> None:
    (tmp_path / "flint.gguf").write_bytes(b"GGUF")
    models = configured_models(BenchConfig(models_dir=str(tmp_path), flint_model="flint.gguf"))
    assert models.flint == tmp_path / "flint.gguf"
    assert models.jeff == HubRef("ggml-org/Qwen3-0.6B-GGUF", "Q8_0")


def test_a_named_file_that_is_missing_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match=r"jeff_model jeff.gguf not found in .*leave jeff_model empty"):
        configured_models(BenchConfig(models_dir=str(tmp_path), jeff_model="jeff.gguf"))


def test_no_file_and_no_reference_is_refused() -> None:
    with pytest.raises(PrerequisiteError, match="no model for flint: set flint_hf"):
        configured_models(BenchConfig(flint_hf=""))
    with pytest.raises(ConfigError, match="flint_hf must be OWNER/REPO"):
        configured_models(BenchConfig(flint_hf="ggml-org/x-"))  # the config's looser check lets this one through


@pytest.mark.llama
def test_the_cpu_serves_the_small_model_unless_told_otherwise() -> None:
    small = models_for(BenchConfig(), gpu=False)
    assert isinstance(small.flint, Path) and small.flint == small.jeff and "SmolLM2" in small.flint.name
    assert models_for(BenchConfig(cpu_models="configured"), gpu=False) == configured_models(BenchConfig())
    assert models_for(BenchConfig(), gpu=True) == configured_models(BenchConfig())


def test_compose_gets_hf_for_references_and_m_for_files(tmp_path: Path) -> None:
    servers = ComposeServers(BenchConfig(), gpu=True, checkout=ROOT)
    flint = tmp_path / "flint.gguf"
    variables = servers._model_variables(Models(flint, HubRef("o/jeff", "Q8_0")), tmp_path / "cache")
    assert variables == {
        "MODELS_DIR": str(tmp_path),
        "FLINT_FROM": "-m",
        "FLINT_REF": "/models/flint.gguf",
        "JEFF_FROM": "-hf",
        "JEFF_REF": "o/jeff:Q8_0",
    }
    only_hub = servers._model_variables(Models(HubRef("o/f"), HubRef("o/j")), tmp_path / "cache")
    assert only_hub["MODELS_DIR"] == str(tmp_path / "cache")  # nothing local: mount something that exists
    assert servers.build_pin == "b11434"
