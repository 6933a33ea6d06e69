"""Tool calls inside the loop: bad calls, Jeff's opinions, and each --approve mode deciding about commands."""

from __future__ import annotations

import io
import json
import socket
import time
from pathlib import Path

import pytest
from agent_helpers import RunAgent

from agent.cli import build_parser
from agent.jeff import Jeff
from bench.llama.process import free_port
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize(
    ("name", "raw", "told"),
    [
        ("read_file", "{not json", "not valid JSON"),
        ("read_file", "[1, 2]", "not a JSON object"),
        ("edit_file", '{"path": "calc.py", "old": "a"}', "'new' is missing"),
        ("delete_file", '{"path": "calc.py"}', "there is no tool named 'delete_file'"),
    ],
)
def test_a_bad_tool_call_is_explained_to_the_model_and_the_run_goes_on(
    run_agent: RunAgent, repo: Path, name: str, raw: str, told: str
) -> None:
    with FakeLlama([fl.tool_call(name, raw), fl.prose("done")]) as flint:
        run = run_agent(repo, flint.url)
        second = flint.requests[1]
    [result] = tool_results(second)
    assert told in result
    if name == "delete_file":
        assert "read_file, write_file, edit_file, run" in result
    else:
        assert f"{name}{{" in result  # the right way to call it
    stored = second["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(json.loads(stored), dict)  # sent back as valid JSON, or the server would refuse the history
    [tool] = run.of("tool")
    assert tool["name"] == name and not tool["ok"] and tool["error"]
    assert run.stop["reason"] == "done"


def test_several_calls_in_one_answer_each_get_their_result_in_order(run_agent: RunAgent, repo: Path) -> None:
    calls = [("read_file", {"path": "calc.py"}), ("run", {"command": "wc -l calc.py"})]
    with FakeLlama([fl.tool_calls(calls), fl.prose("done")]) as flint:
        run_agent(repo, flint.url)
        second = flint.requests[1]["messages"]
    assistant, first_result, second_result = second[2:5]
    assert [c["id"] for c in assistant["tool_calls"]] == [first_result["tool_call_id"], second_result["tool_call_id"]]
    assert first_result["content"].startswith("def add") and second_result["content"].startswith("2 calc.py")


def test_write_and_edit_text_is_logged_as_its_length(run_agent: RunAgent, repo: Path) -> None:
    script = [fl.tool_call("edit_file", {"path": "calc.py", "old": "a + b", "new": "b + a"}), fl.prose("done")]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url)
    assert run.of("tool")[0]["args"] == {"path": "calc.py", "old": 5, "new": 5}
    assert (repo / "calc.py").read_text().endswith("return b + a\n")


def test_a_refused_path_reaches_the_model_as_refused(run_agent: RunAgent, repo: Path) -> None:
    script = [fl.tool_call("write_file", {"path": "../escape.txt", "content": "x"}), fl.prose("done")]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url)
        [result] = tool_results(flint.requests[1])
    assert "outside the repository" in result and run.of("tool")[0]["refused"] is True
    assert not (repo.parent / "escape.txt").exists()


def commands(*lines: str) -> list[fl.Reply]:
    return [fl.tool_call("run", {"command": line}) for line in lines] + [fl.prose("done")]


@pytest.mark.parametrize(("mode", "created"), [("yes", True), ("no", False)])
def test_flags_decide_about_commands_that_need_approval(
    run_agent: RunAgent, repo: Path, mode: str, created: bool
) -> None:
    with FakeLlama(commands("ls", "touch made.txt")) as flint:
        run = run_agent(repo, flint.url, "--approve", mode)
        results = tool_results(flint.requests[-1])
    assert [(a["decision"], a["by"]) for a in run.of("approval")] == [
        ("run", "rule"),
        ("run" if created else "refused", "flag"),
    ]
    assert (repo / "made.txt").exists() is created
    assert ("was not run" in results[1]) is not created and run.of("tool")[1]["refused"] is not created


def test_ask_mode_reads_the_answer_from_stdin(run_agent: RunAgent, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\nn\n"))
    with FakeLlama(commands("touch first.txt", "touch second.txt")) as flint:
        run = run_agent(repo, flint.url, "--approve", "ask")
    assert [(a["decision"], a["by"]) for a in run.of("approval")] == [("run", "user"), ("refused", "user")]
    assert (repo / "first.txt").exists() and not (repo / "second.txt").exists()


def test_jeff_gives_an_opinion_on_every_command_and_it_is_shown(
    run_agent: RunAgent, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opinions = [fl.prose("yes, it only lists files\nextra line"), fl.prose("No - it deletes the module")]
    with FakeLlama(commands("ls", "rm calc.py")) as flint, FakeLlama(opinions) as jeff:
        run = run_agent(repo, flint.url, "--jeff", jeff.url, "--approve", "no")
        asked = jeff.requests
    assert [j["opinion"] for j in run.of("jeff")] == ["yes, it only lists files", "No - it deletes the module"]
    assert all(
        j["usage"]["total_tokens"] > 0 and j["timings"]["prompt_n"] > 0 and j["error"] is None for j in run.of("jeff")
    )
    assert "rm calc.py" in asked[1]["messages"][-1]["content"]
    assert asked[0]["max_tokens"] <= 64 and asked[0]["temperature"] == 0 and "tools" not in asked[0]
    assert "jeff: No - it deletes the module" in capsys.readouterr().out
    assert (repo / "calc.py").exists()  # --approve no: Jeff's opinion is shown, the flag decides


@pytest.mark.parametrize(("opinion", "runs"), [("yes, it only creates an empty file", True), ("no, not needed", False)])
def test_approve_jeff_lets_his_first_word_decide(run_agent: RunAgent, repo: Path, opinion: str, runs: bool) -> None:
    with FakeLlama(commands("touch made.txt")) as flint, FakeLlama([fl.prose(opinion)]) as jeff:
        run = run_agent(repo, flint.url, "--jeff", jeff.url, "--approve", "jeff")
    [approval] = run.of("approval")
    assert (approval["decision"], approval["by"]) == ("run" if runs else "refused", "jeff")
    assert (repo / "made.txt").exists() is runs


def test_an_unreachable_jeff_never_stops_the_run_and_counts_as_no(run_agent: RunAgent, repo: Path) -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    with FakeLlama(commands("touch made.txt", "ls")) as flint:
        run = run_agent(repo, flint.url, "--jeff", gone, "--approve", "jeff")
    assert [j["opinion"] for j in run.of("jeff")] == [None, None]
    assert all("connection" in j["error"] for j in run.of("jeff"))
    assert [a["decision"] for a in run.of("approval")] == ["refused", "run"]  # ls still runs by rule
    assert not (repo / "made.txt").exists() and run.stop["reason"] == "done"


def test_a_jeff_server_error_is_recorded_not_raised(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama(commands("ls")) as flint, FakeLlama([fl.loading()]) as jeff:
        run = run_agent(repo, flint.url, "--jeff", jeff.url)
    [opinion] = run.of("jeff")
    assert opinion["opinion"] is None and "Loading model" in opinion["error"]
    assert run.stop["reason"] == "done"


def test_a_silent_jeff_costs_the_jeff_timeout_per_command_not_more(run_agent: RunAgent, repo: Path) -> None:
    silent = socket.socket()  # accepts connections (the kernel does) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with FakeLlama(commands("ls", "wc -l calc.py")) as flint:
            started = time.monotonic()
            run = run_agent(repo, flint.url, "--jeff", url, "--jeff-timeout", "0.5")
            elapsed = time.monotonic() - started
    finally:
        silent.close()
    jeffs = run.of("jeff")
    assert [j["opinion"] for j in jeffs] == [None, None] and all("timeout" in j["error"] for j in jeffs)
    assert all(0.4 <= j["seconds"] < 3 for j in jeffs) and elapsed < 15
    assert run.of("start")[0]["jeff_timeout"] == 0.5 and run.stop["reason"] == "done"


def test_jeff_waits_ten_seconds_at_most_by_default() -> None:
    args = build_parser().parse_args(["--repo", ".", "--task", "x"])
    assert args.jeff_timeout == 10.0 and Jeff("http://127.0.0.1:9").client.timeout == 10.0
