"""Matrices that could measure nothing are refused before their first run (bench/run/preflight.py): a window the
task's first request does not fit, as Flint's own tokenizer counts it, names the window that does; hidden tests that
do not collect on the reference solution name the error. Nothing is run, no row is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_flint_bench import fake_flint_argv
from small_task import HIDDEN_TEST, NAME, ROOT

from bench import cli
from bench.fixtures.fixture import load_fixture
from bench.results.append import read_rows
from bench.run.preflight import hidden_tests_problem
from bench.score.graders import LocalGrader
from bench.testing import fake_llama

pytestmark = pytest.mark.usefixtures("child_processes")  # the collection is a pytest of the grader's


def run_argv(out: Path, flint: fake_llama.FakeLlama, ctx: int, root: Path = ROOT) -> list[str]:
    return fake_flint_argv(flint, out, ctx=ctx, root=root)


def test_a_window_the_first_request_does_not_fit_is_refused_naming_the_one_that_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_llama.FakeLlama(n_ctx=512) as flint:
        status = cli.main(run_argv(tmp_path / "results.csv", flint, 512))
        asked = [path for method, path in flint.hits if path.startswith("/v1/chat")]
    assert status == cli.EXIT_ERROR
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"bench: fixture {NAME}: the task cannot fit the smallest configured window (512 tokens)")
    assert f"measured by {flint.url}'s tokenizer" in last and "(--ctx 1024)" in last and "nothing was run" in last
    assert asked == [] and read_rows(tmp_path / "results.csv") == []


def broken_root(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "fixtures_root"
    shutil.copytree(ROOT, root)
    (root / "hidden_tests" / NAME / HIDDEN_TEST).write_text(text)
    return root


def test_hidden_tests_that_do_not_collect_are_refused_before_the_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = broken_root(tmp_path, "import calc\n\ndef test_add():\nassert calc.add(2, 3) == 5\n")
    with fake_llama.FakeLlama() as flint:
        status = cli.main(run_argv(tmp_path / "results.csv", flint, 4096, root))
        asked = [path for method, path in flint.hits if path.startswith("/v1/chat")]
    assert status == cli.EXIT_ERROR and asked == []
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"bench: the hidden tests of fixture {NAME} do not collect on its reference solution: ")
    assert "IndentationError" in last and f"(bench fixtures check {NAME})" in last
    assert not (tmp_path / "results.csv").exists() or read_rows(tmp_path / "results.csv") == []


def test_a_hidden_test_importing_what_the_solution_lacks_or_collecting_nothing_is_named(tmp_path: Path) -> None:
    missing = broken_root(tmp_path / "a", "import calc_helpers\n\ndef test_add():\n    assert calc_helpers\n")
    problem = hidden_tests_problem(load_fixture(NAME, missing), LocalGrader())
    assert problem is not None and "ModuleNotFoundError: No module named 'calc_helpers'" in problem
    empty = broken_root(tmp_path / "b", "import calc\n")
    problem = hidden_tests_problem(load_fixture(NAME, empty), LocalGrader())
    assert problem is not None and "no test collected" in problem
    assert hidden_tests_problem(load_fixture(NAME, ROOT), LocalGrader()) is None
