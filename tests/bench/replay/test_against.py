"""`bench replay --against`: a run's recorded requests sent to a llama-server again, against the scripted server
(the real CPU server: tests/integration/test_replay_real.py and tests/e2e/test_cpu_loop.py)."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import pytest

from agent.cli import main as agent_main
from bench.cli import main as bench_main
from bench.errors import ConfigError
from bench.llama.server_command import parse_command, record
from bench.replay.checkpoints import conversation
from bench.replay.server_replay import report
from bench.replay.server_report import read_csv
from bench.replay.targets import targets
from bench.testing import fake_llama

CALLS = [fake_llama.tool_call("read_file", {"path": f"m{i % 3}.py"}) for i in range(6)]


def agent_run(tmp_path: Path, flint: fake_llama.FakeLlama, sampling: str | None = None) -> Path:
    repo, run_dir = tmp_path / "repo", tmp_path / "run"
    repo.mkdir()
    run_dir.mkdir()
    for i in range(3):
        (repo / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 40)
    argv = [
        "--repo",
        str(repo),
        "--task",
        "read",
        "--flint",
        flint.url,
        "--no-jeff",
        "--approve",
        "no",
        "--max-steps",
        "6",
        "--preset",
        "part3",
        "--events",
        str(run_dir / "events.jsonl"),
        *(["--sampling", sampling] if sampling else []),
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        agent_main(argv)
    return run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    with fake_llama.FakeLlama(CALLS, n_ctx=3072) as flint:
        return agent_run(tmp_path, flint)


def replay(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = bench_main(["replay", *args])
    return status, capsys.readouterr().out


def test_a_run_sent_again_to_a_server_that_answers_as_then_reproduces_every_prompt_n(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replayed.csv"
    with fake_llama.FakeLlama(CALLS, n_ctx=3072) as again:
        status, printed = replay([str(run_dir), "--against", again.url, "--csv", str(out)], capsys)
        sent = again.requests
    assert status == 0 and "prompt_n as recorded on 6 of 6 requests" in printed
    assert "sampled at temperature" not in printed  # the agent's default is greedy: no answer is drawn again
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["prompt_n"] for r in rows] == [r["recorded_prompt_n"] for r in rows] and len(rows) == 6
    assert all(r["prompt_ms"] and r["predicted_ms"] and r["unexplained"] == "0" for r in rows)
    assert all(r["answered_otherwise"] == "false" for r in rows)
    bodies = [line for line in (run_dir / "events.requests.jsonl").read_text().splitlines()]
    assert len(sent) == len(bodies)  # every recorded body, and nothing else


def test_where_the_server_answers_otherwise_the_output_says_where_prompt_n_parted_from_the_recording(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = [*CALLS[:2], fake_llama.tool_call("read_file", {"path": "m2.py", "offset": 5}), *CALLS[3:]]
    with fake_llama.FakeLlama(other, n_ctx=3072) as again:
        status, printed = replay([str(run_dir), "--against", again.url], capsys)
    assert status == 0 and "prompt_n as recorded on 5 of 6 requests" in printed
    assert "; 1 more differs only through the server's answer before it." in printed
    assert "request 3: prompt_n" in printed and "request 2 was answered otherwise" in printed


def test_the_same_call_in_other_tokens_is_said_to_be_where_prompt_n_parted_and_a_lost_cache_is_not(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a sampled run's replay on the real server can (the same call drawn in other tokens, the next prompt reusing
    less of it), request 3 differs only through request 2's answer; request 4, whose slot is lost, is not explained."""
    spaced = fake_llama.tool_call("read_file", '{ "path" :  "m2.py" }')  # the run's call, as other text
    other = [*CALLS[:2], spaced, CALLS[3], {**CALLS[4], "forget": True}, CALLS[5]]
    with fake_llama.FakeLlama(other, n_ctx=3072) as again:
        status, printed = replay([str(run_dir), "--against", again.url], capsys)
    assert status == 0 and "prompt_n as recorded on 4 of 6 requests" in printed
    assert "; 1 more differs only through the server's answer before it." in printed
    lines = [line for line in printed.splitlines() if line.startswith("- run request")]
    assert len(lines) == 2 and lines[0].startswith("- run request 3: prompt_n ")
    assert ": its prompt reused " in lines[0] and "tokens of the server's answer to request 2, the run's" in lines[0]
    assert "(request 2 was answered alike in other tokens: " in lines[0]
    assert lines[1].startswith("- run request 4: prompt_n ") and ": " not in lines[1].split("recorded ")[1]


def test_a_sampled_run_is_named_as_one_whose_answers_a_replay_draws_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_llama.FakeLlama(CALLS, n_ctx=3072) as flint:
        sampled = agent_run(tmp_path, flint, sampling='{"temperature": 0.7}')
    with fake_llama.FakeLlama(CALLS, n_ctx=3072) as again:
        status, printed = replay([str(sampled), "--against", again.url], capsys)
    assert status == 0 and f"note: {sampled.name}: sampled at temperature 0.7 without a seed: " in printed


def test_two_servers_over_the_same_run_give_one_table_paired_by_request(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second server loses its cache on requests 2 to 5 (as a sliding-window model without a checkpoint): every
    one of them computes more anew, the loss is counted as unexplained, and the paired table says so."""
    losing = [CALLS[0], CALLS[1], *({**c, "forget": True} for c in CALLS[2:])]
    out = tmp_path / "both.csv"
    with fake_llama.FakeLlama(CALLS, n_ctx=3072) as same, fake_llama.FakeLlama(losing, n_ctx=3072) as lossy:
        args = [str(run_dir), "--against", same.url, "--against", lossy.url, "--csv", str(out)]
        status, printed = replay(args, capsys)
    assert status == 0
    paired = printed.split("## Paired by request")[1]
    line = next(row for row in paired.splitlines() if "tokens computed anew" in row)
    assert line.startswith(f"| {lossy.url} |") and "| 6 |" in line and "| 4 / 0 |" in line
    assert "too few pairs to tell (4 moved; the smallest p they allow is 0.12)" in line  # 2 / 2**4
    with out.open() as f:
        rows = list(csv.DictReader(f))
    lost = {int(r["request"]): int(r["unexplained"]) for r in rows if r["target"] == lossy.url}
    assert [n for n, tokens in sorted(lost.items()) if tokens > 0] == [2, 3, 4, 5]
    assert all(r["unexplained"] == "0" for r in rows if r["target"] == same.url)
    assert report(read_csv(out)) + "\n" == printed  # the CSV holds all the report says


def test_the_checkpoint_check_passes_a_server_that_keeps_its_cache_and_fails_one_that_loses_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    turns = len(conversation())
    keeps = [fake_llama.prose("ok")] * turns
    loses = [*keeps[:4], {**keeps[4], "forget": True}, keeps[5]]  # the request after the user message
    with fake_llama.FakeLlama(keeps) as good, fake_llama.FakeLlama(loses) as bad:
        assert replay(["--check-checkpoints", "--against", good.url], capsys)[0] == 0
        status, printed = replay(["--check-checkpoints", "--against", bad.url], capsys)
    assert status == 1
    assert "FAIL: the server computed again" in printed and "(request 4: " in printed


def test_set_ups_come_from_the_flags_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    chosen = targets(["embedded"], [], None, ["--cache-reuse 0", "--cache-reuse 256"])
    assert [(t.label, t.server_args) for t in chosen] == [
        ("embedded --cache-reuse 0", ("--cache-reuse", "0")),
        ("embedded --cache-reuse 256", ("--cache-reuse", "256")),
    ]
    with pytest.raises(ConfigError, match="URL"):
        targets(["localhost:8080"], [], None, [])
    with pytest.raises(ConfigError, match="no such file"):
        targets(["embedded"], [str(tmp_path / "llama-server")], None, [])
    with pytest.raises(ConfigError, match="quote"):
        targets(["embedded"], [], None, ['--alias "open'])


def test_a_recorded_command_keeps_its_files_and_comes_apart_into_what_the_bench_sets_and_the_rest(
    tmp_path: Path,
) -> None:
    grammar = tmp_path / "servers" / "flint.gbnf"
    grammar.parent.mkdir()
    grammar.write_text('root ::= "x"\n')
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    command = [
        "/opt/llama-server",
        "-m",
        "/m.gguf",
        "-c",
        "1024",
        "--host",
        "127.0.0.1",
        "--port",
        "9",
        "-t",
        "1",
        "-np",
        "1",
        "--metrics",
        "--grammar-file",
        str(grammar),
        "--cache-reuse=256",
    ]
    kept = command[:-2] + ["flint-server/flint.gbnf", command[-1]]
    (tmp_path / "cmdline").write_bytes(b"\0".join(c.encode() for c in command) + b"\0")
    parsed = parse_command(kept, run_dir)
    assert (parsed.binary, parsed.model, parsed.ctx, parsed.threads) == (Path("/opt/llama-server"), "/m.gguf", 1024, 1)
    assert parsed.args == ["--grammar-file", str(run_dir / "flint-server" / "flint.gbnf"), "--cache-reuse=256"]
    assert parsed.value("--cache-reuse") == "256"
    assert record(None, run_dir) == {}
