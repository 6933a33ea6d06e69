"""How Flint is served: forced for SmolLM2, the fenced template for the Qwen CPU models, native elsewhere, and a
template of the user's own accepted, recorded by its digest and given to every server kind."""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

import pytest

from bench import ROOT
from bench.config import BenchConfig, load_config
from bench.errors import ConfigError, PrerequisiteError
from bench.llama.forced_tools import GRAMMAR_NAME, TEMPLATE_NAME
from bench.llama.models import Models
from bench.llama.serving import (
    FENCED,
    FENCED_DIR,
    FORCED,
    NATIVE,
    external_serving,
    resolve,
    template_args,
    user_template,
)
from bench.servers.compose import ComposeServers


@pytest.mark.parametrize(
    ("settings", "small_model", "serving"),
    [
        ({}, True, FORCED),
        ({"cpu_model": "qwen2.5-coder-0.5b"}, True, FENCED),
        ({"cpu_model": "qwen2.5-coder-1.5b"}, True, FENCED),
        ({"cpu_model": "qwen2.5-coder-0.5b"}, False, NATIVE),  # a GPU serves the configured models
        ({"flint_tools": "fenced"}, True, FENCED),
        ({"flint_tools": "fenced"}, False, FENCED),
        ({"flint_tools": "native", "cpu_model": "qwen2.5-coder-0.5b"}, True, NATIVE),
        ({"flint_tools": "forced", "cpu_model": "qwen2.5-coder-0.5b"}, True, FORCED),
    ],
)
def test_auto_serves_each_cpu_model_the_way_it_calls_tools(settings: dict, small_model: bool, serving: str) -> None:
    assert resolve(BenchConfig(**settings), small_model) == serving


def test_forced_is_refused_where_the_bench_does_not_serve_the_small_model() -> None:
    with pytest.raises(PrerequisiteError, match="flint_tools: forced serves the small model on CPU only"):
        resolve(BenchConfig(flint_tools="forced"), small_model=False)


def test_a_template_of_ones_own_is_accepted_and_keyed_by_its_digest(tmp_path: Path) -> None:
    template = tmp_path / "mine.jinja"
    template.write_text("{{ messages[0].content }}")
    config = BenchConfig(flint_server_args=f"-fa on --chat-template-file {template}", cpu_model="qwen2.5-coder-0.5b")
    digest = hashlib.sha256(template.read_bytes()).hexdigest()[:12]
    assert resolve(config, small_model=True) == f"native-template:{digest}"
    assert resolve(config, small_model=False) == f"native-template:{digest}"
    assert external_serving(config) == f"native-template:{digest}"
    fenced = ROOT / FENCED_DIR
    assert template_args(f"native-template:{digest}", fenced) == ["--jinja"]  # the file stays in the user's flags
    template.write_text("{{ messages[-1].content }}")
    assert resolve(config, small_model=True) != f"native-template:{digest}"  # another template, another key


def test_a_template_of_ones_own_beside_the_benchs_is_refused(tmp_path: Path) -> None:
    template = tmp_path / "mine.jinja"
    template.write_text("x")
    for tools in ("forced", "fenced"):
        config = BenchConfig(flint_server_args=["--chat-template-file", str(template)], flint_tools=tools)
        with pytest.raises(PrerequisiteError, match=f"flint_tools: {tools} brings the bench's: set flint_tools native"):
            resolve(config, small_model=True)
    missing = BenchConfig(flint_server_args=["--chat-template-file", str(tmp_path / "nope.jinja")])
    with pytest.raises(PrerequisiteError, match="nope.jinja: no such file"):
        resolve(missing, small_model=True)
    with pytest.raises(PrerequisiteError, match="needs a file after it"):
        user_template(["--chat-template-file"])


def test_the_benchs_own_template_flags_stay_refused() -> None:
    for flag in ("--jinja", "--grammar-file", "--chat-template"):
        with pytest.raises(ConfigError, match="is the bench's own: set flint_tools"):
            load_config(None, {"flint_server_args": [flag, "x"]})


def test_the_fenced_template_is_given_to_embedded_servers_and_mounted_by_compose() -> None:
    assert template_args(FENCED, ROOT / FENCED_DIR) == [
        "--jinja",
        "--chat-template-file",
        str(ROOT / FENCED_DIR / TEMPLATE_NAME),
    ]
    assert template_args(NATIVE, ROOT / FENCED_DIR) == [] and template_args(FORCED, ROOT / FENCED_DIR) == []
    assert "```json" in (ROOT / FENCED_DIR / TEMPLATE_NAME).read_text()
    assert (ROOT / FENCED_DIR / GRAMMAR_NAME).read_text() == ""  # no grammar of the bench's: llama.cpp derives its own
    servers = ComposeServers(BenchConfig(cpu_model="qwen2.5-coder-0.5b"), gpu=False, checkout=ROOT)
    assert servers.serving == FENCED and servers._serving_dir(2048) == ROOT / FENCED_DIR


def test_compose_mounts_a_template_of_ones_own_and_keeps_the_rest_of_the_flags(tmp_path: Path) -> None:
    template = tmp_path / "mine.jinja"
    template.write_text("{{ 'mine' }}")
    config = BenchConfig(flint_server_args=["-fa", "on", "--chat-template-file", str(template), "--swa-full"])
    servers = ComposeServers(config, gpu=False, log_dir=tmp_path / "logs", checkout=ROOT)
    folder = servers._serving_dir(2048)
    assert (folder / TEMPLATE_NAME).read_text() == "{{ 'mine' }}" and (folder / GRAMMAR_NAME).read_text() == ""
    models = Models(tmp_path / "flint.gguf", tmp_path / "jeff.gguf")
    flags = shlex.split(servers._environment(2048, models, tmp_path, 1, 2)["FLINT_SERVER_ARGS"])
    assert "--chat-template-file" not in flags and flags[-3:] == ["-fa", "on", "--swa-full"]


def test_compose_gpu_services_refuse_a_template(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="compose's GPU services take no template"):
        ComposeServers(BenchConfig(flint_tools="fenced"), gpu=True, checkout=ROOT)
