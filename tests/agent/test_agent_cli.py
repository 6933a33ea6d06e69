"""The command line: options, defaults from the environment, exit codes, and failures the user sees as one line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import ROOT, AgentProcess, RunAgent, read_events

from agent.cli import main
from bench.llama.process import free_port
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama


def test_an_unreachable_server_at_start_exits_2_with_one_line_naming_the_url(
    agent_process: AgentProcess, repo: Path, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    events = tmp_path / "events.jsonl"
    done = agent_process(["--repo", str(repo), "--task", "x", "--flint", url, "--events", str(events)])
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and f"{url}/props" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    [stop] = read_events(events)
    assert (stop["reason"], stop["steps"]) == ("server_error", 0) and url in stop["message"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--task", "x", "--approve", "jeff", "--no-jeff"], "--approve jeff needs a Jeff server"),
        (["--task", "x", "--sampling", "[1]"], "expected a JSON object"),
        (["--task", "x", "--clear-at", "1.5"], "(0, 1]"),
        (["--task", "x", "--max-steps", "0"], ">= 1"),
        (["--task-file", "/nonexistent/TASK.md"], "cannot read --task-file"),
        (["--task", "   "], "the task is empty"),
        ([], "one of the arguments --task --task-file is required"),
    ],
)
def test_usage_errors_exit_2_with_a_message(
    repo: Path, args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--repo", str(repo), "--flint", "http://127.0.0.1:9", *args]) == 2
    assert said in capsys.readouterr().err


def test_a_repo_that_is_not_a_folder_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--repo", str(tmp_path / "missing"), "--task", "x"]) == 2
    assert capsys.readouterr().err.strip() == f"agent: --repo {tmp_path / 'missing'} is not a folder: " + (
        "pass the repository the agent should work in"
    )


@pytest.mark.usefixtures("child_processes")
def test_the_task_file_is_sent_as_the_task(repo: Path) -> None:
    with FakeLlama([fl.prose("done")]) as flint:
        main(["--repo", str(repo), "--task-file", str(repo / "TASK.md"), "--flint", flint.url, "--no-jeff"])
        first = flint.requests[0]["messages"]
    assert first[1] == {"role": "user", "content": (repo / "TASK.md").read_text()}


@pytest.mark.usefixtures("child_processes")
def test_urls_come_from_the_environment_unless_given(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLlama([fl.tool_call("run", {"command": "ls"})]) as flint, FakeLlama() as jeff:
        monkeypatch.setenv("FLINT_URL", flint.url)
        monkeypatch.setenv("JEFF_URL", jeff.url)
        events = repo.parent / "env.jsonl"
        assert main(["--repo", str(repo), "--task", "x", "--approve", "no", "--events", str(events)]) == 0
        start = read_events(events)[0]
        assert (start["flint"], start["jeff"]) == (flint.url, jeff.url) and len(jeff.requests) == 1
        main(["--repo", str(repo), "--task", "x", "--no-jeff", "--events", str(events)])
        assert read_events(events)[0]["jeff"] is None and len(jeff.requests) == 1


def test_sampling_is_merged_into_every_request_and_recorded(run_agent: RunAgent, repo: Path) -> None:
    sampling = {"temperature": 0.7, "ignore_eos": True, "max_tokens": 300}
    with FakeLlama([fl.tool_call("read_file", {"path": "calc.py"}), fl.prose("done")]) as flint:
        run = run_agent(repo, flint.url, "--sampling", json.dumps(sampling))
        default_run = run_agent(repo, flint.url)
        bodies = flint.requests
    assert all(body[k] == v for body in bodies[:2] for k, v in sampling.items())
    assert run.events[0]["sampling"] == sampling
    assert bodies[2]["temperature"] == 0.0 and bodies[2]["seed"] == 42
    assert default_run.events[0]["sampling"] == {"temperature": 0.0, "seed": 42}
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["read_file", "write_file", "edit_file", "run"]


def test_a_template_without_tool_support_is_noted(
    run_agent: RunAgent, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLlama([fl.prose("done")], supports_tool_calls=False) as flint:
        run = run_agent(repo, flint.url)
    assert run.events[0]["supports_tool_calls"] is False
    assert "no tool-call support" in capsys.readouterr().out


def test_a_server_that_goes_away_mid_run_is_retried_then_stops_with_server_error(
    agent_process: AgentProcess, repo: Path, tmp_path: Path
) -> None:
    events = tmp_path / "gone.jsonl"
    with FakeLlama([fl.tool_call("read_file", {"path": "calc.py"}), fl.die()]) as flint:
        args = ["--repo", str(repo), "--task", "x", "--flint", flint.url, "--no-jeff", "--events", str(events)]
        done = agent_process([*args, "--retries", "2", "--retry-delay", "0.05"])
    trace = read_events(events)
    errors = [e for e in trace if e["event"] == "http_error"]
    assert [(e["step"], e["attempt"], e["type"]) for e in errors] == [
        (2, 1, "connection"),
        (2, 2, "connection"),
        (2, 3, "connection"),
    ]
    assert "Connection refused" in errors[-1]["message"]
    assert done.returncode == 1 and trace[-1]["reason"] == "server_error" and trace[-1]["steps"] == 2
    assert flint.url in trace[-1]["message"]
    assert "Traceback" not in done.stdout + done.stderr
    assert f"stopped: server_error after 2 step(s): llama-server at {flint.url}" in done.stdout


def test_bad_bodies_and_dropped_connections_are_retried_within_the_step(run_agent: RunAgent, repo: Path) -> None:
    script = [fl.drop_connection(), fl.non_json(), fl.truncated_body(), fl.prose("done")]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url, "--retries", "4")
    assert [(e["step"], e["attempt"], e["type"]) for e in run.of("http_error")] == [
        (1, 1, "connection"),
        (1, 2, "bad_body"),
        (1, 3, "bad_body"),
    ]
    assert run.stop["reason"] == "done" and run.stop["steps"] == 1 and len(run.of("response")) == 1


def test_a_request_the_server_rejects_stops_without_retrying(run_agent: RunAgent, repo: Path) -> None:
    rejected = fl.http_error(400, "invalid_request_error", "Failed to parse messages: bad role")
    with FakeLlama([rejected, fl.prose("never")]) as flint:
        run = run_agent(repo, flint.url, "--retries", "4")
    assert len(flint.requests) == 1 and run.exit_code == 1
    assert run.stop["reason"] == "server_error" and "bad role" in run.stop["message"]


def ctrl_c_as_in_a_terminal() -> None:
    """A job started in the background by a non-interactive shell (a CI script's `&`) inherits SIGINT ignored, and
    Python then installs no KeyboardInterrupt handler: give the agent the terminal's default back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def started_agent(args: list[str]) -> Iterator[subprocess.Popen[str]]:
    """The agent as a process of its own, killed and its pipes closed whatever the test's outcome."""
    agent = subprocess.Popen(
        [sys.executable, "-m", "agent", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    with agent:  # closes the pipes and waits
        try:
            yield agent
        finally:
            if agent.poll() is None:
                agent.kill()


def wait_for(condition: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.usefixtures("child_processes")
def test_ctrl_c_while_waiting_for_the_server_stops_interrupted(repo: Path, tmp_path: Path) -> None:
    events = tmp_path / "interrupted.jsonl"
    with FakeLlama([{**fl.prose("slow"), "delay": 30}]) as flint:
        args = ["--repo", str(repo), "--task", "x", "--flint", flint.url, "--events", str(events)]
        with started_agent(args) as agent:
            wait_for(lambda: flint.requests)
            agent.send_signal(signal.SIGINT)
            out, err = agent.communicate(timeout=30)
    assert agent.returncode == 1 and "Traceback" not in out + err
    stop = read_events(events)[-1]
    assert (stop["reason"], stop["steps"]) == ("interrupted", 1)


@pytest.mark.usefixtures("child_processes")
def test_ctrl_c_during_a_command_kills_the_command(repo: Path, tmp_path: Path) -> None:
    events = tmp_path / "interrupted.jsonl"
    with FakeLlama([fl.tool_call("run", {"command": "echo $$ > shell.pid; sleep 60"})]) as flint:
        args = ["--repo", str(repo), "--task", "x", "--flint", flint.url, "--approve", "yes", "--events", str(events)]
        with started_agent(args) as agent:
            wait_for(lambda: (repo / "shell.pid").exists() and (repo / "shell.pid").read_text().strip())
            agent.send_signal(signal.SIGINT)
            agent.communicate(timeout=30)
    shell = int((repo / "shell.pid").read_text())
    wait_for(lambda: not Path(f"/proc/{shell}").exists() or "State:\tZ" in Path(f"/proc/{shell}/status").read_text())
    assert read_events(events)[-1]["reason"] == "interrupted"
    assert agent.returncode == 1


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--clear-at" in capsys.readouterr().out


def test_python_dash_m_agent_runs_the_agent(agent_process: AgentProcess, repo: Path) -> None:
    with FakeLlama([fl.prose("done")]) as flint:
        env = {**os.environ, "FLINT_URL": flint.url}
        done = agent_process(["--repo", str(repo), "--task", "x", "--no-jeff"], env=env)
    assert done.returncode == 0 and "stopped: done after 1 step(s)" in done.stdout


@pytest.mark.usefixtures("child_processes")
def test_an_interpreter_without_pytest_is_a_setup_error(repo: Path) -> None:
    # -S leaves site-packages out, so this interpreter has the standard library (all the agent needs) but no pytest
    done = subprocess.run(
        [sys.executable, "-S", "-m", "agent", "--repo", str(repo), "--task", "x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "pytest is not installed" in done.stderr and "Traceback" not in done.stderr
