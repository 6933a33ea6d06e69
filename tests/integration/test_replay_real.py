"""The server's side against the real CPU llama-server (one per module, the small model): the checkpoint check that
tells a build that keeps an agent's prompt cache (bench replay --check-checkpoints), llama-bench's floor speeds for
that server's build, model and settings, and a recorded conversation sent again reproducing its prompt_n.

The whole loop (a real bench's runs replayed against their own server, every row's prefill and decode and its
llama-bench floor) is checked on the real runs of tests/e2e/test_cpu_loop.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import ROOT
from bench.cli import main as bench_main
from bench.llama.binaries import find_small_model
from bench.llama.llama_bench import measure_server
from bench.llama.process import LlamaProcess
from bench.replay.checkpoints import write_run
from bench.replay.recorded import load_run
from bench.replay.send import replay_run
from bench.servers.base import default_threads

pytestmark = [pytest.mark.llama, pytest.mark.xdist_group("replay-real")]
CTX = 1024
EXAMPLE = ROOT / "results" / "example"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaProcess]:
    folder = tmp_path_factory.mktemp("replay-real")
    with LlamaProcess(find_small_model(), CTX, folder / "server.log", threads=default_threads()) as process:
        yield process


def test_the_checkpoint_check_passes_the_installed_build(
    server: LlamaProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """SmolLM2 has no sliding window: the pinned build keeps every cached token across the user message."""
    assert bench_main(["replay", "--check-checkpoints", "--against", server.url]) == 0
    printed = capsys.readouterr().out
    assert "ok: every request reused all that the server had cached" in printed
    rows = [line for line in printed.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 6 and all(row.endswith("| 0 |") for row in rows)
    assert any(row.split("|")[2].strip() == "user" for row in rows[1:])  # a user message after the tool turns


def test_a_conversation_sent_twice_to_the_real_server_computes_the_same_tokens_anew(
    server: LlamaProcess, tmp_path: Path
) -> None:
    """The same bodies, the same seed, the slot emptied before each pass: greedy decoding on the CPU answers alike,
    so the second pass's prompt_n, cache_n and answers are the first's, request by request."""
    run = load_run(write_run(tmp_path))
    first, _ = replay_run(run, server.url)
    second, _ = replay_run(run, server.url)
    assert [s.status for s in first] == [200] * len(run.requests)
    assert [(s.figure("prompt_n"), s.figure("cache_n")) for s in first] == [
        (s.figure("prompt_n"), s.figure("cache_n")) for s in second
    ]
    assert [s.message for s in first] == [s.message for s in second]


def test_llama_bench_measures_the_servers_build_model_and_settings_once(
    server: LlamaProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    measured = measure_server(server.pid, find_small_model(), CTX)
    assert measured.speeds is not None, measured.note
    assert [p.depth for p in measured.speeds.points] == [0, CTX // 2]  # on a CPU: 0 and half the window
    assert all(p.prompt_tps > 0 and p.gen_tps > 0 for p in measured.speeds.points)
    assert measured.seconds < 60
    again = measure_server(server.pid, find_small_model(), CTX)
    assert again.speeds == measured.speeds and again.seconds == 0.0
    assert os.listdir(tmp_path / "agent-bench" / "llama-bench")


def test_the_shipped_examples_part3_run_replays_against_embedded_and_leaves_the_example_as_it_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As on a fresh clone: the run's fixture and grammar from this checkout, its own server started, every recorded
    request's prompt_n computed again alike or its difference put down to the server's answer before it, and no file
    of the example written. The run sampled (temperature 0.7, no seed), so the server draws its answers again, and
    SmolLM2 writes the same call in other tokens one time in ten or so (`py` + `test` for `pytest`): the prompt after
    it reuses less of it: 8 of 43 replays here differed so in one request (CI's one 7 of 8, its request not kept,
    fits). A lost cache or another template would differ with no answer to explain it, and fail this."""
    part3 = sorted((EXAMPLE / "runs").glob("*-part3-*"))[0]
    before = {path: path.read_bytes() for path in EXAMPLE.rglob("*") if path.is_file()}
    assert bench_main(["replay", str(part3), "--against", "embedded"]) == 0
    out = capsys.readouterr().out
    assert f"note: {part3.name}: sampled at temperature 0.7 without a seed" in out
    counted = re.search(r"as recorded on (\d+) of (\d+) requests that have a recorded one(?:; (\d+) more differ)?", out)
    assert counted, out
    equal, checked, by_answer = (int(n or 0) for n in counted.groups())
    assert checked == 8 and equal + by_answer == checked, out  # the last request has no recorded answer
    differing = [line for line in out.splitlines() if line.startswith(f"- {part3.name} request ")]
    assert len(differing) == by_answer and all(": its prompt reused " in line for line in differing), out
    assert {path: path.read_bytes() for path in EXAMPLE.rglob("*") if path.is_file()} == before
