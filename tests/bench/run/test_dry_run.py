"""`bench run --dry-run` lists the runs and every setting with where it came from, and starts nothing; windows are
taken as llama.cpp's users write them (4k, 32K); Flint's model has flags of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from small_task import ROOT

from bench.cli import main
from bench.config import load_config
from bench.run.spelling import FROM_MAKE

Capture = pytest.CaptureFixture[str]


def setting_line(out: str, name: str) -> list[str]:
    return next(line for line in out.splitlines() if line.startswith(f"  {name} ")).split()


def test_dry_run_lists_the_runs_and_where_each_setting_came_from(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "bench.yaml"
    settings.write_text(f"reps: 2\nfixtures: [calc]\nfixtures_root: {ROOT}\nout: {tmp_path / 'r.csv'}\n")
    monkeypatch.setenv("AGENTBENCH_MAX_STEPS", "7")
    monkeypatch.delenv(FROM_MAKE, raising=False)
    flags = ["--ctx", "4k,8K", "--presets", "part3,late", "--flint-model", "qwen.gguf", "--flint-hf", "a/b:Q4_K_M"]
    assert main(["run", "--config", str(settings), "--dry-run", *flags]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"bench run --dry-run: 8 runs into {tmp_path / 'r.csv'}; nothing is started\n")
    assert "  run 1/8 calc part3 ctx=4096 rep=1\n" in out and "  run 8/8 calc late ctx=8192 rep=2\n" in out
    assert setting_line(out, "ctx") == ["ctx", "4096,8192", "command", "line", "(--ctx)"]
    assert setting_line(out, "reps") == ["reps", "2", str(settings)]
    assert setting_line(out, "max_steps") == ["max_steps", "7", "$AGENTBENCH_MAX_STEPS"]
    assert setting_line(out, "flint_model") == ["flint_model", "qwen.gguf", "command", "line", "(--flint-model)"]
    assert setting_line(out, "flint_hf") == ["flint_hf", "a/b:Q4_K_M", "command", "line", "(--flint-hf)"]
    assert setting_line(out, "keep") == ["keep", "2", "default"]
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "runs").exists()
    monkeypatch.setenv(FROM_MAKE, "1")  # make bench CTX=4k ... says it in make's words
    assert main(["run", "--config", str(settings), "--dry-run", "--ctx", "4k"]) == 0
    assert setting_line(capsys.readouterr().out, "ctx") == ["ctx", "4096", "make", "(CTX=)"]


def test_windows_as_llama_cpp_users_write_them(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_config(None, {"ctx": ["32k", 4096]}).ctx == [32768, 4096]
    monkeypatch.setenv("AGENTBENCH_CTX", "8k,16K")
    assert load_config(None, {}).ctx == [8192, 16384]
    with pytest.raises(SystemExit) as refused:
        main(["run", "--dry-run", "--ctx", "4q"])
    assert refused.value.code == 2
    assert "expected context sizes such as 4096,8192 or 4k,8k, got '4q'" in capsys.readouterr().err


def test_the_dry_run_names_every_agent_and_the_cpu_model_the_bench_will_give_them(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FROM_MAKE, raising=False)
    flags = ["--agents", "article,mini-swe-agent", "--ctx", "8192", "--fixtures", "calc", "--fixtures-root", str(ROOT)]
    assert main(["run", "--dry-run", *flags, "--out", str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out
    assert "run 2/2 calc mini-swe-agent ctx=8192" in out, out
    line = setting_line(out, "cpu_model")
    assert line[1] == "qwen2.5-coder-0.5b" and "mini-swe-agent" in line and "chosen" in line, line
    assert not (tmp_path / "r.csv").exists()
