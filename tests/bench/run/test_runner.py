"""The runner end to end with the scripted llama-server as external servers and local sandboxes (no Docker, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_flint_bench import fake_flint_config
from small_task import CODE, SETTINGS, UNTOUCHED, VISIBLE_TEST

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ResultsError, ServerStartError
from bench.fixtures.fixture import load_fixture
from bench.results.append import read_rows
from bench.run.runner import Bench
from bench.sandbox.base import AgentRun
from bench.sandbox.local import LocalSandbox
from bench.testing import fake_llama

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

SOLUTION = Path(load_fixture("todo_repo", ROOT).solution_dir)


def config(tmp_path: Path, flint: fake_llama.FakeLlama, **changes: object) -> BenchConfig:
    """todo_repo's runs, for the tests that read its grading (small_config for the others)."""
    return fake_flint_config(tmp_path, flint, **changes)


def small_config(tmp_path: Path, flint: fake_llama.FakeLlama, **changes: object) -> BenchConfig:
    """The suite's small task (tests/small_task.py), whose grading is one pytest: for the tests of the runner that
    need a task run and graded but nothing of todo_repo's grading."""
    return config(tmp_path, flint, **(SETTINGS | changes))


def test_cut_answer_taken_as_done_is_scored_and_labelled(tmp_path: Path) -> None:
    """The article's fake done: part2 takes a cut answer as the answer and pytest passes on the untouched repo."""
    with fake_llama.FakeLlama([fake_llama.length_cut("I will start by thinking about due dates")]) as flint:
        rows = Bench(config(tmp_path, flint), checkout=ROOT).run()
    (row,) = rows
    assert (row["stop_reason"], row["claimed_done"], row["steps"]) == ("done", "true", "1")
    assert (row["hidden_passed"], row["hidden_total"], row["visible_passed"]) == ("2", "6", "3")
    assert row["files_changed"] == "0" and row["tests_added"] == "0"
    assert row["failure_labels"].split(";") == ["execution_misrepresentation", "cut_answers"]
    assert row["cut_answers"] == "1"
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] != ""
    assert row["error"] == ""
    assert row["peak_gpu_mib_flint"] == "" or row["gpu_mem_method"].startswith("nvml")
    assert row["gpu_mem_method"] != ""
    run_dir = tmp_path / "runs" / row["run_id"]
    for name in ("events.jsonl", "agent.log", "diff.patch", "junit.xml", "run.json", "score.json", "server.log"):
        assert (run_dir / name).exists(), name
    assert read_rows(tmp_path / "results.csv") == rows


def test_a_solved_task_scores_six_of_six_with_its_new_tests(tmp_path: Path) -> None:
    replies = [
        fake_llama.tool_call("read_file", {"path": "todo.py"}),
        fake_llama.tool_call("write_file", {"path": "todo.py", "content": (SOLUTION / "todo.py").read_text()}),
        fake_llama.tool_call("write_file", {"path": "test_due.py", "content": (SOLUTION / "test_due.py").read_text()}),
        fake_llama.prose("Due dates and the overdue listing are in, with tests."),
    ]
    with fake_llama.FakeLlama(replies, n_ctx=16384) as flint:
        (row,) = Bench(config(tmp_path, flint, presets=["strict"], ctx=[16384]), checkout=ROOT).run()
    assert (row["stop_reason"], row["hidden_passed"], row["hidden_total"]) == ("done", "6", "6")
    assert row["files_changed"] == "1" and int(row["tests_added"]) >= 1
    assert row["failure_labels"] == "" and row["error"] == ""
    assert row["steps"] == "4"


def test_resume_skips_measured_runs_and_refuses_other_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_llama.FakeLlama() as flint:
        first = Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()
        assert [r["rep"] for r in first] == ["1", "2"]
        served = len(flint.requests)
        with pytest.raises(ResultsError, match="--resume"):
            Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()
        assert Bench(small_config(tmp_path, flint, reps=2, resume=True), checkout=ROOT).run() == []
        assert len(flint.requests) == served  # nothing was run again
        assert "run 2/2 already in results.csv: skipped (--resume)" in capsys.readouterr().out  # the live display
        more = Bench(small_config(tmp_path, flint, reps=3, resume=True), checkout=ROOT).run()
        assert [r["rep"] for r in more] == ["3"]
        with pytest.raises(ResultsError, match="calc part2 with a different max_steps"):
            Bench(
                small_config(tmp_path, flint, reps=3, resume=True, max_steps=3), checkout=ROOT
            ).run()  # the file's runs had 4
        with pytest.raises(ResultsError, match="different sampling"):
            Bench(
                small_config(tmp_path, flint, reps=4, resume=True, sampling={"temperature": 0.7}), checkout=ROOT
            ).run()
    assert [r["rep"] for r in read_rows(tmp_path / "results.csv")] == ["1", "2", "3"]
    log = (tmp_path / "results.csv.log").read_text()  # every bench on the file appended its diagnostics
    assert log.count(" INFO bench.run.runner: 2 runs -> ") == 2 and " DEBUG bench.run.runner: row of " in log


def test_a_server_that_dies_mid_run_is_an_infrastructure_failure_and_the_bench_goes_on(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([fake_llama.tool_call("read_file", {"path": CODE}), fake_llama.die()]) as flint:
        rows = Bench(
            small_config(tmp_path, flint, reps=2, server_wait_s=0), checkout=ROOT
        ).run()  # 0: no waiting for it to come back
    assert len(rows) == 2
    first, second = rows
    assert first["stop_reason"] == "infra_error" and "died during the run" in first["error"]
    assert first["steps"] == "1"  # what was measured before the server died is kept: one answered request
    assert "infrastructure" in first["failure_labels"]
    assert second["stop_reason"] == "infra_error" and "no healthy llama-server" in second["error"]
    assert len(read_rows(tmp_path / "results.csv")) == 2


def test_servers_that_never_come_up_stop_the_bench_with_one_line(tmp_path: Path) -> None:
    flint = fake_llama.FakeLlama()
    url = flint.url
    flint.server.server_close()  # nothing listens there
    settings = config(tmp_path, flint, flint_url=url)
    with pytest.raises(ServerStartError, match=f"no healthy llama-server answers at {url}"):
        Bench(settings, checkout=ROOT).run()
    assert not (tmp_path / "results.csv").exists()


def test_wrong_context_size_is_refused(tmp_path: Path) -> None:
    with fake_llama.FakeLlama(n_ctx=8192) as flint, pytest.raises(ServerStartError, match="n_ctx=8192"):
        Bench(config(tmp_path, flint), checkout=ROOT).run()


def test_visible_test_edited_through_the_shell_is_put_back_by_the_agent(tmp_path: Path) -> None:
    """The agent restores its existing tests after every command (agent/guards.py); the bench's own check of the
    visible tests (tests/bench/score/test_grading.py) then has nothing to report."""
    replies = [
        fake_llama.tool_call(
            "run", {"command": f"chmod u+w {VISIBLE_TEST} && echo 'def test_x(): pass' > {VISIBLE_TEST}"}
        ),
        fake_llama.prose("Done."),
    ]
    with fake_llama.FakeLlama(replies) as flint:
        (row,) = Bench(small_config(tmp_path, flint), checkout=ROOT).run()
    assert row["visible_tests_modified"] == ""
    assert (row["hidden_passed"], row["hidden_total"], row["visible_passed"]) == UNTOUCHED
    events = [
        json.loads(line) for line in (tmp_path / "runs" / row["run_id"] / "events.jsonl").read_text().splitlines()
    ]
    assert any(e["event"] == "approval" and e["decision"] == "run" for e in events)
    assert [f["path"] for e in events if e["event"] == "restored" for f in e["files"]] == [VISIBLE_TEST]


def test_each_run_starts_with_an_empty_prompt_cache(tmp_path: Path) -> None:
    """Without emptying the slot, the second run would reuse the first run's prompt and reprocess almost nothing."""
    with fake_llama.FakeLlama() as flint:
        first, second = Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()
    assert first["prompt_tokens_reprocessed"] == second["prompt_tokens_reprocessed"] == first["prompt_tokens"]
    assert first["cache_tokens"] == second["cache_tokens"] == "0"
    assert [hit for hit in flint.hits if hit[0] == "POST" and hit[1].startswith("/slots/0")] != []


def test_a_server_that_cannot_empty_its_cache_is_noted(tmp_path: Path) -> None:
    with fake_llama.FakeLlama(slot_save=False) as flint:
        (row,) = Bench(small_config(tmp_path, flint), checkout=ROOT).run()
    assert "could not empty the prompt cache" in row["error"] and "--slot-save-path" in row["error"]
    assert row["stop_reason"] == "done"  # a note, not an infrastructure failure


def test_resume_sets_a_half_written_row_aside_and_runs_it_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "results.csv"
    with fake_llama.FakeLlama() as flint:
        Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()
        lines = out.read_text().splitlines(keepends=True)
        out.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash in the middle of rep 2
        again = Bench(small_config(tmp_path, flint, reps=2, resume=True), checkout=ROOT).run()
    assert [r["rep"] for r in again] == ["2"]
    assert "partial" in caplog.text
    assert [r["rep"] for r in read_rows(out)] == ["1", "2"]
    assert (tmp_path / "results.csv.partial").read_text().strip()


def test_resume_runs_an_infra_error_run_again(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    with fake_llama.FakeLlama([fake_llama.tool_call("read_file", {"path": CODE}), fake_llama.die()]) as flint:
        (failed,) = Bench(small_config(tmp_path, flint, server_wait_s=0), checkout=ROOT).run()
    assert failed["stop_reason"] == "infra_error"
    with fake_llama.FakeLlama(n_ctx=4096) as flint:
        (again,) = Bench(small_config(tmp_path, flint, resume=True, flint_url=flint.url), checkout=ROOT).run()
    assert again["stop_reason"] != "infra_error" and again["rep"] == "1"
    assert [r["stop_reason"] for r in read_rows(out)] == ["infra_error", again["stop_reason"]]
    assert (out.parent / "runs" / failed["run_id"]).is_dir()  # the failed attempt's artifacts are kept


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("rm ../out/events.jsonl && ln -s /dev/zero ../out/events.jsonl", "a symbolic link"),
        ("rm ../out/events.jsonl && mkfifo ../out/events.jsonl", "a FIFO"),
        ("rm ../out/events.jsonl && ln -s /etc/shadow ../out/events.jsonl", "a symbolic link"),
    ],
)
def test_a_trace_turned_into_a_trap_is_an_infra_error_and_the_matrix_goes_on(
    tmp_path: Path, command: str, says: str
) -> None:
    """In a local sandbox the model's commands run as the bench's user and can reach the trace: the bench reads it
    only as a regular file, so a link to a device or a secret, or a FIFO, costs that run its figures and no more."""
    replies = [fake_llama.tool_call("run", {"command": command}), fake_llama.prose("done")]
    with fake_llama.FakeLlama(replies) as flint:
        trapped, after = Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()
    assert trapped["stop_reason"] == "infra_error" and says in trapped["error"]
    assert trapped["prompt_tokens"] == "" and trapped["hidden_passed"] != ""  # nothing from the trace; still graded
    assert after["stop_reason"] != "infra_error"
    assert not (tmp_path / "runs" / trapped["run_id"] / "events.jsonl").exists()


def test_a_diff_over_the_limit_is_named_in_error_and_not_kept(tmp_path: Path) -> None:
    big = "x = 1\n" * 200_000  # 1.2 MB of changes against diff_limit 1m
    replies = [fake_llama.tool_call("write_file", {"path": "big.py", "content": big}), fake_llama.prose("Done.")]
    with fake_llama.FakeLlama(replies) as flint:
        Bench(small_config(tmp_path, flint, diff_limit="1m"), checkout=ROOT).run()
    (row,) = read_rows(tmp_path / "results.csv")
    assert "diff of more than 1048576 bytes (diff_limit): not kept, and the run is not graded" in row["error"]
    assert row["hidden_passed"] == "" and row["files_changed"] == ""
    assert not (tmp_path / "runs" / row["run_id"] / "diff.patch").exists()


# The agent writes its trace at its own offset (agent/trace.py), so its next lines overwrite the start of what the
# command appends: 16 KB of blanks go first and take that, leaving the deep line whole (a blank line is no event).
DEEP_LINE = '{"event": "response", "usage": ' + '{"a": ' * 981 + "1" + "}" * 982 + "\n"


def test_absurd_server_figures_stay_out_of_the_row_and_a_981_deep_usage_ends_one_run_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `usage` nested 981 levels deep in the trace (the agent bounds the server's and keeps its trace's end its
    own; here a hostile agent process is played by appending one once it has ended) costs its own run at most, and
    the bench goes on; in the next run a hostile server's negative and 1e308 token counts are unreadable: empty
    cells and a note."""
    run_agent = LocalSandbox.run_agent
    appended: list[Path] = []

    def hostile_once(self: LocalSandbox, workdir: Path, out_dir: Path, *args: Any, **kwargs: Any) -> AgentRun:
        run = run_agent(self, workdir, out_dir, *args, **kwargs)
        if not appended:
            with open(out_dir / "events.jsonl", "a") as trace:
                trace.write(" " * 16384 + "\n" + DEEP_LINE)
            appended.append(out_dir)
        return run

    monkeypatch.setattr(LocalSandbox, "run_agent", hostile_once)
    absurd = {**fake_llama.prose("done"), "usage": {"prompt_tokens": -5, "completion_tokens": 1e308}}
    replies = [fake_llama.prose("done"), absurd]
    with fake_llama.FakeLlama(replies) as flint:
        first, second = Bench(small_config(tmp_path, flint, reps=2), checkout=ROOT).run()

    assert first["stop_reason"] == "infra_error" and "nests deeper than 64 levels" in first["error"]
    assert second["stop_reason"] == "done" and second["steps"] == "1"
    assert (second["prompt_tokens"], second["completion_tokens"], second["max_request_tokens"]) == ("", "", "")
    assert "unreadable server figures" in second["error"] and "-5 is negative" in second["error"]
    assert "completion_tokens = 1e+308 is above the 4096-token window" in second["error"]
    assert second["prompt_tokens_reprocessed"] != ""  # the timings were sound: their sums stand
