"""`bench replay` without --flint-url counts prompts with the runs' own CPU model, served as they were
(bench/replay/command.py); runs of other or mixed models are refused in one line naming --flint-url."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import ROOT
from bench.errors import PrerequisiteError
from bench.llama.cpu_models import CPU_MODELS
from bench.replay import command
from bench.replay.command import counting_server

QWEN = CPU_MODELS["qwen2.5-coder-0.5b"]
SMOLLM2 = CPU_MODELS["smollm2"]


@pytest.fixture(autouse=True)
def model_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model a name resolves to, without fetching or checking a GGUF (bench/llama/chunks.py does that)."""
    monkeypatch.setattr(command, "cpu_model_file", lambda name: Path("/models") / CPU_MODELS[name].file)


def runs(tmp_path: Path, *served: tuple[str, str]) -> list[Path]:
    folders = []
    for number, (model, serving) in enumerate(served):
        folder = tmp_path / f"run{number}"
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"flint_model": model, "flint_serving": serving}))
        folders.append(folder)
    return folders


def test_runs_of_a_qwen_model_are_counted_by_that_model_with_the_fenced_template(tmp_path: Path) -> None:
    model, args = counting_server(runs(tmp_path, (QWEN.file, "native-fenced"), (QWEN.file, "native-fenced")), ROOT)
    assert model.name == QWEN.file
    assert args[:2] == ["--jinja", "--chat-template-file"] and args[2].endswith("flint-fenced/flint.jinja")


def test_runs_of_the_small_model_keep_its_forced_template(tmp_path: Path) -> None:
    model, args = counting_server(runs(tmp_path, (SMOLLM2.file, "forced_tools")), ROOT)
    assert model.name == SMOLLM2.file and args[-1].endswith("flint-forced-tools.jinja")
    assert counting_server(runs(tmp_path / "native", (QWEN.file, "native")), ROOT)[1] == []  # its own template


@pytest.mark.parametrize(
    "served",
    [
        ((QWEN.file, "native-fenced"), (SMOLLM2.file, "forced_tools")),  # two models
        ((QWEN.file, "native-fenced"), (QWEN.file, "native")),  # one model, served two ways
        (("gpt-oss-20b-mxfp4.gguf", "native"),),  # not a CPU model
    ],
)
def test_runs_served_otherwise_are_refused_naming_flint_url(tmp_path: Path, served: tuple[tuple[str, str]]) -> None:
    with pytest.raises(PrerequisiteError, match="pass --flint-url"):
        counting_server(runs(tmp_path, *served), ROOT)
