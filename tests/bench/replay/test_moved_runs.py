"""Runs recorded on another machine or checkout replay here: the shipped example's runs (their run.json from before
Flint's command line was recorded) get their forced-tools grammar from this checkout's fixture, and a recorded
fixtures root that is not on this machine says so instead of failing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import ROOT
from bench.replay import targets
from bench.replay.recorded import load_run

EXAMPLE_RUNS = Path(__file__).resolve().parents[3] / "results" / "example" / "runs"
PART3 = sorted(EXAMPLE_RUNS.glob("*-part3-*"))[0]


@pytest.mark.parametrize("recorded_root", ["", "/nowhere/a/clone/of/another/machine"])
def test_an_example_run_gets_its_grammar_from_this_checkouts_fixture(
    recorded_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(targets, "find_small_model", lambda: tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    run = load_run(PART3)
    assert run.info["fixtures_root"] == ""  # shipped relative: this checkout's own fixtures
    run.info["fixtures_root"] = recorded_root
    found = targets.settings(run, targets.Target("embedded"), tmp_path, ROOT)
    grammar = Path(found.args[found.args.index("--grammar-file") + 1])
    assert grammar.is_file() and "todo.py" in grammar.read_text()  # the fixture's own files offered
    assert found.model.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and found.ctx == 1024
    assert ("is not here: this checkout's" in found.note) == bool(recorded_root)
