"""llama-bench's floor speeds for a host llama-server (bench/llama/llama_bench.py): the server's own settings
passed on, its JSON read by depth, the figures cached by build, model and settings.

The stand-in process and llama-bench here are test doubles for the logic (what is passed, when it runs again); the
real llama-bench is run against the real CPU server in tests/integration/test_replay_real.py."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.llama.llama_bench import PLANS, arguments, bench_flags, measure_server, parse_results, plan_for
from bench.llama.server_command import process_command
from bench.measure.time_split import Speeds

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

# Two depths, prompt processing and generation at each, as `llama-bench -o json` prints them (other fields left out).
RESULTS = [
    {"n_prompt": 64, "n_gen": 0, "n_depth": 0, "avg_ts": 180.5},
    {"n_prompt": 0, "n_gen": 8, "n_depth": 0, "avg_ts": 90.0},
    {"n_prompt": 64, "n_gen": 0, "n_depth": 256, "avg_ts": 150.0},
    {"n_prompt": 0, "n_gen": 8, "n_depth": 256, "avg_ts": 70.0},
]


def test_the_servers_speed_settings_are_passed_on_the_last_value_of_a_flag_winning() -> None:
    command = [
        "llama-server",
        "-m",
        "m.gguf",
        "-t",
        "1",
        "-ngl",
        "all",
        "--flash-attn",
        "on",
        "-ctk=q8_0",
        "-c",
        "4096",
        "--threads",
        "3",
        "--port",
        "8080",
        "-ub",
        "256",
    ]
    assert bench_flags(command) == ["-ctk", "q8_0", "-fa", "on", "-ngl", "999", "-t", "3", "-ub", "256"]
    assert bench_flags(["llama-server", "-ngl", "auto", "-t", "2"]) == ["-t", "2"]


def test_the_depths_reach_where_the_requests_go_and_a_cpu_stops_at_8192() -> None:
    """An agent's requests at CTX=4096 reach depth 2,080 before a clearing: measured there, not guessed."""
    assert PLANS["cpu"].depths(4096) == [0, 2048] and PLANS["gpu"].depths(4096) == [0, 1024, 2048, 3072]
    assert PLANS["cpu"].depths(32768) == [0, 8192] and PLANS["gpu"].depths(32768) == [0, 8192, 16384, 24576]
    assert PLANS["cpu"].depths(1) == [0, 1]


def test_a_gpu_server_gets_the_longer_plan_and_a_cpu_server_the_short_one() -> None:
    assert plan_for(["-ngl", "999"]) == PLANS["gpu"] and plan_for(["-t", "1"]) == PLANS["cpu"]
    args = arguments(Path("m.gguf"), ["-t", "1"], PLANS["cpu"], 1024)
    assert args == [
        "-m",
        "m.gguf",
        "-t",
        "1",
        "-p",
        "64",
        "-n",
        "8",
        "-d",
        "0,512",
        "-r",
        "2",
        "--no-warmup",
        "-o",
        "json",
    ]


def test_the_results_are_read_by_depth_and_a_depth_without_both_tests_is_refused() -> None:
    speeds = parse_results(json.dumps(RESULTS))
    assert [(p.depth, p.prompt_tps, p.gen_tps) for p in speeds.points] == [(0, 180.5, 90.0), (256, 150.0, 70.0)]
    with pytest.raises(ValueError, match="depth 256"):
        parse_results(json.dumps(RESULTS[:3]))


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, Path, Path]]:
    """A process whose command line names bin/llama-server, with a stand-in bin/llama-bench beside it that counts
    its runs; the cache goes to the test's folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "llama-server").write_text("")
    runs = tmp_path / "runs"
    bench = folder / "llama-bench"
    bench.write_text(f"#!/bin/sh\necho run >> {runs}\necho '{json.dumps(RESULTS)}'\n")
    bench.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    with server_from(folder) as pid:
        yield pid, model, runs


@contextlib.contextmanager
def server_from(folder: Path) -> Iterator[int]:
    """A process whose command line names folder/llama-server."""
    process = subprocess.Popen([str(folder / "llama-server"), "-c", "sleep 30", "-t", "1"], executable="/bin/sh")
    deadline = time.monotonic() + 10
    while process_command(process.pid) is None and time.monotonic() < deadline:  # set once the exec completes
        time.sleep(0.01)
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def test_llama_bench_runs_once_per_build_model_and_settings_and_is_read_from_the_cache_after(
    server: tuple[int, Path, Path],
) -> None:
    pid, model, runs = server
    first = measure_server(pid, model, 1024)
    again = measure_server(pid, model, 1024)
    assert first.speeds == again.speeds and first.speeds is not None and first.speeds.points[0].prompt_tps == 180.5
    assert "measured in" in first.note and "read from" in again.note and again.seconds == 0.0
    assert runs.read_text().count("run") == 1
    measure_server(pid, model, 512)  # another window, other depths: another plan
    model.write_bytes(b"GGUF, re-downloaded")  # another model file under the same name
    measure_server(pid, model, 512)
    assert runs.read_text().count("run") == 3


def test_the_same_build_and_model_elsewhere_are_read_from_the_cache_and_a_changed_library_is_measured(
    server: tuple[int, Path, Path], tmp_path: Path
) -> None:
    """A clean clone's fresh virtual environment holds the same wheel's files and the same model at other paths."""
    pid, model, runs = server
    measure_server(pid, model, 1024)
    elsewhere = tmp_path / "clone" / "bin"
    shutil.copytree(tmp_path / "bin", elsewhere)
    model_copy = shutil.copy(model, tmp_path / "clone" / "model.gguf")
    with server_from(elsewhere) as copied:
        assert "read from" in measure_server(copied, Path(model_copy), 1024).note
        (elsewhere / "libggml-cpu.so").write_bytes(b"another build")
        assert "measured in" in measure_server(copied, Path(model_copy), 1024).note
    assert runs.read_text().count("run") == 2


def test_cached_figures_the_servers_own_calibration_beats_by_half_again_are_measured_again(
    server: tuple[int, Path, Path],
) -> None:
    """A figure cached in a busy moment (prompt 180.5, generation 90.0 tokens/s at depth 0 here) is measured again
    when the server at start is 1.5 times as fast; a calibration within that, or none, reads the cache."""
    pid, model, runs = server
    measure_server(pid, model, 1024)
    assert "read from" in measure_server(pid, model, 1024, Speeds(prompt_tps=260.0, gen_tps=130.0)).note
    assert "read from" in measure_server(pid, model, 1024, None).note
    assert runs.read_text().count("run") == 1
    again = measure_server(pid, model, 1024, Speeds(prompt_tps=200.0, gen_tps=140.0))
    assert "measured in" in again.note and "generation 140.0 tokens/s at start against 90.0" in again.note
    assert again.speeds is not None and runs.read_text().count("run") == 2


def test_a_failing_llama_bench_gives_no_speeds_and_says_why(server: tuple[int, Path, Path], tmp_path: Path) -> None:
    pid, model, _ = server
    (tmp_path / "bin" / "llama-bench").write_text("#!/bin/sh\necho 'error: failed to load model' >&2\nexit 1\n")
    measured = measure_server(pid, model, 1024)
    assert measured.speeds is None and "status 1: error: failed to load model" in measured.note
    assert measure_server(None, model, 1024).speeds is None  # no host process: nothing to measure
