"""llama-server flags of the user's own, end to end with the real CPU server: `bench run --flint-server-args
"--cache-reuse 256"` gives a row that says 256, and `bench compare` of it against a default row says the setups
differ and never pools them. Two one-step benches (Jeff off: one server each) on the suite's small task
(tests/small_task.py: its grading is one pytest, and nothing of todo_repo's is read here), the cheapest real runs
there are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from small_task import NAME
from small_task import ROOT as TASKS

from bench.analyze.compare import compare
from bench.results.append import append_row, read_rows

pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("server-args")]
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "use_jeff: false\nagent_retries: 1\nagent_retry_delay_s: 0.1\n"
RUN = [
    "run",
    "--servers",
    "embedded",
    "--sandbox",
    "local",
    "--ctx",
    "1024",
    "--presets",
    "part3",
    "--fixtures",
    NAME,
    "--fixtures-root",
    str(TASKS),
    "--max-steps",
    "1",
]


def bench(folder: Path, name: str, *flags: str) -> Path:
    out = folder / f"{name}.csv"
    argv = [sys.executable, "-m", "bench", *RUN, "--config", str(folder / "bench.yaml"), "--out", str(out), *flags]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("server-args")
    (folder / "bench.yaml").write_text(SETTINGS)
    return bench(folder, "default"), bench(folder, "reuse", "--flint-server-args", "--cache-reuse 256")


def test_the_flags_reach_the_server_and_the_row_says_so(results: tuple[Path, Path]) -> None:
    (default,), (reuse,) = (read_rows(path) for path in results)
    assert reuse["error"] == "" and reuse["stop_reason"] in ("step_limit", "context_exhausted"), reuse["error"]
    # cache_reuse is read from the running server's own command line (/proc), not from the settings
    assert (reuse["flint_server_args"], reuse["cache_reuse"]) == ("--cache-reuse 256", "256")
    assert (default["flint_server_args"], default["cache_reuse"]) == ("", "0")
    for row in (default, reuse):  # the default verbosity logs no cache types: they come from the flags
        assert (row["cache_type_k"], row["cache_type_v"], row["flash_attn"], row["kv_settings_source"]) == (
            "f16",
            "f16",
            "auto",
            "args",
        )
        assert (row["cache_ram_mib"], row["jeff_server_args"]) == ("0", "")


def test_compare_says_the_setups_differ_and_never_pools_them(results: tuple[Path, Path], tmp_path: Path) -> None:
    default, reuse = (str(path) for path in results)
    text, _ = compare([default, reuse])
    heading = next(line for line in text.splitlines() if line.startswith("## "))
    assert "differs:" in heading, text
    assert "cache_reuse 0 (default.csv) vs cache_reuse 256 (reuse.csv)" in heading
    assert "no flint_server_args (default.csv) vs flint_server_args --cache-reuse 256 (reuse.csv)" in heading
    both = tmp_path / "both.csv"  # the two runs in one file: two configurations, never one
    for row in (*read_rows(results[0]), *read_rows(results[1])):
        append_row(both, row)
    text, _ = compare([str(both), str(both)])
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(headings) == 2, text
    assert any("cache_reuse 256" in h for h in headings) and any("cache_reuse 0" in h for h in headings)


def test_the_flags_ab_gets_a_verdict_by_flint_server_args(results: tuple[Path, Path], tmp_path: Path) -> None:
    """Real rows: the flags and the cache setting parsed from them move together, and --by pairs them."""
    default, reuse = (str(path) for path in results)
    text, _ = compare([default, reuse], by="flint_server_args")
    assert "cache_reuse, cache_ram_mib" in text and "nothing to compare it with" not in text
    changes = "| reuse.csv · flint_server_args --cache-reuse 256 vs default.csv · no flint_server_args | change |"
    assert changes in text and "\n| wall_s | " in text.split(changes, 1)[1], text
    both = tmp_path / "both.csv"
    for row in (*read_rows(results[0]), *read_rows(results[1])):
        append_row(both, row)
    text, _ = compare([str(both)])
    assert f"`bench compare {both} --by flint_server_args` gives verdicts" in text
