"""A value `make bench` refuses is named as the user typed it (CTX=abc, WORKERS=-1), not as the flag of bench run
the Makefile turned it into (--ctx, --workers); `bench run` itself keeps its flags' names."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from bench.cli import EXIT_ERROR, main
from bench.run.spelling import FROM_MAKE, MAKE_VARIABLES

ROOT = Path(__file__).resolve().parents[3]


def test_every_variable_the_makefiles_bench_recipe_passes_has_its_spelling() -> None:
    recipe = (ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    passed = dict(re.findall(r"\$\(call flag,([A-Z_]+),--([a-z-]+)\)", recipe))
    assert len(passed) >= 14
    assert {name: MAKE_VARIABLES.get(flag.replace("-", "_")) for name, flag in passed.items()} == {
        name: name for name in passed
    }


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--ctx", "abc"], "make bench: CTX: expected context sizes such as 4096,8192 or 4k,8k, got 'abc'"),
        (["--reps", "x"], "make bench: REPS: invalid int value: 'x'"),
    ],
)
def test_a_value_make_bench_cannot_read_is_named_by_its_variable(
    flags: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(FROM_MAKE, "1")
    with pytest.raises(SystemExit) as ended:
        main(["run", *flags])
    assert ended.value.code == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith(said) and "Options of make bench" in err and "--" not in err and "usage:" not in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workers", "-1"], "WORKERS=-1 is not allowed: input should be greater than or equal to 1"),
        (["--presets", "part3,nope"], "PRESETS=part3,nope is not allowed: unknown preset 'nope'"),
        (["--sandbox", "foo"], "SANDBOX=foo is not allowed: input should be 'auto'"),
    ],
)
def test_a_value_make_bench_refuses_is_named_by_its_variable_and_value(
    flags: list[str], said: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(FROM_MAKE, "1")
    with caplog.at_level(logging.ERROR):
        assert main(["run", *flags]) == EXIT_ERROR
    assert caplog.messages[-1].startswith(said) and "--" not in caplog.messages[-1]


def test_bench_run_keeps_its_flags_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(FROM_MAKE, raising=False)
    with pytest.raises(SystemExit):
        main(["run", "--ctx", "abc"])
    assert "argument --ctx: expected context sizes" in capsys.readouterr().err
    with caplog.at_level(logging.ERROR):
        assert main(["run", "--workers", "-1"]) == EXIT_ERROR
    assert caplog.messages[-1].startswith("the command line: workers = -1 is not allowed")


def test_a_fixtures_root_without_fixtures_is_named_as_make_bench_was_given_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv(FROM_MAKE, "1")
    with caplog.at_level(logging.ERROR):
        assert main(["run", "--fixtures-root", str(tmp_path), "--dry-run"]) == EXIT_ERROR
    assert caplog.messages[-1].startswith(f"FIXTURES_ROOT={tmp_path}: no fixtures/ folder in {tmp_path}")
