"""Failure labels from hand-written traces and rows, and reading traces that were cut short."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.errors import ResultsError
from bench.measure.labels import Outcome, failure_labels, read_paths
from bench.measure.trace import load_trace


def row(**values: str) -> Outcome:
    """An outcome written the way a results row reads ("" = not measured)."""
    base = {"stop_reason": "done", "files_changed": "1", "hidden_passed": "6", "hidden_total": "6", **values}
    counts = {k: int(v) if v else None for k, v in base.items() if k != "stop_reason"}
    return Outcome(stop_reason=base["stop_reason"] or None, **counts)


def stop(reason: str = "done") -> dict[str, Any]:
    return {"t": 9.0, "event": "stop", "reason": reason, "steps": 4, "message": None}


def tool(name: str, args: dict[str, Any], *, ok: bool = True, refused: bool = False, step: int = 1) -> dict[str, Any]:
    return {"t": 1.0, "event": "tool", "step": step, "name": name, "args": args, "ok": ok, "refused": refused}


def read(path: str, refused: bool = False) -> dict[str, Any]:
    return tool("read_file", {"path": path}, refused=refused)


def shell(command: str, refused: bool = False) -> dict[str, Any]:
    return tool("run", {"command": command}, refused=refused)


def edit(ok: bool) -> dict[str, Any]:
    return tool("edit_file", {"path": "todo.py", "old": 3, "new": 5}, ok=ok, step=2)


def test_a_clean_completed_run_has_no_labels() -> None:
    assert failure_labels([read("todo.py"), edit(True), stop()], row()) == []


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"files_changed": "0"}, ["execution_misrepresentation"]),  # done on an untouched repo
        ({"hidden_passed": "2"}, ["execution_misrepresentation"]),  # done with hidden tests failing
        ({"files_changed": "", "hidden_passed": "", "hidden_total": ""}, []),  # nothing measured proves nothing
        ({"stop_reason": "step_limit", "files_changed": "0"}, ["idle_execution"]),
        ({"stop_reason": "step_limit", "files_changed": "2", "hidden_passed": "0"}, []),
        ({"stop_reason": "context_exhausted"}, ["context_exhausted"]),
        ({"stop_reason": "server_error"}, ["server_error"]),
        ({"stop_reason": "infra_error"}, ["infrastructure"]),
        ({"stop_reason": "interrupted"}, []),
    ],
)
def test_labels_from_the_row(values: dict[str, str], expected: list[str]) -> None:
    assert failure_labels([stop(values.get("stop_reason", "done"))], row(**values)) == expected


def test_step_limit_without_a_measured_file_count_looks_at_the_writes_in_the_trace() -> None:
    unmeasured = row(stop_reason="step_limit", files_changed="")
    assert failure_labels([edit(False), stop("step_limit")], unmeasured) == ["idle_execution"]
    assert failure_labels([edit(True), stop("step_limit")], unmeasured) == []


def test_reading_one_file_three_times_is_idle_however_it_was_read() -> None:
    events = [read("todo.py"), shell("cat ./todo.py"), shell("cd . && cat -n todo.py | head"), stop()]
    assert failure_labels(events, row()) == ["idle_execution"]


def test_two_reads_or_reads_of_different_files_are_not_idle() -> None:
    assert failure_labels([read("todo.py"), read("todo.py"), read("test_todo.py"), stop()], row()) == []


def test_refused_commands_and_redirections_do_not_count_as_reads() -> None:
    events = [
        read("todo.py"),
        read("todo.py"),
        shell("cat todo.py", refused=True),
        shell("cat > todo.py <<EOF"),
        stop(),
    ]
    assert failure_labels(events, row()) == []


def test_cut_answers_come_from_cut_events() -> None:
    cut = {"t": 2.0, "event": "cut", "step": 2, "kind": "unparsed", "dropped": True, "message": "Failed to parse"}
    assert failure_labels([cut, stop()], row()) == ["cut_answers"]


def test_a_trace_without_stop_is_an_infrastructure_failure() -> None:
    assert failure_labels([read("todo.py")], row(stop_reason="")) == ["infrastructure"]
    assert failure_labels([], row(stop_reason="")) == ["infrastructure"]


def test_the_trace_stop_reason_is_used_when_the_row_has_none() -> None:
    assert failure_labels([stop("context_exhausted")], row(stop_reason="")) == ["context_exhausted"]


def test_several_labels_come_in_a_fixed_order() -> None:
    cut = {"t": 2.0, "event": "cut", "step": 2, "kind": "length", "dropped": True}
    events = [read("a.py"), read("a.py"), read("a.py"), cut, stop("done")]
    assert failure_labels(events, row(files_changed="0")) == [
        "execution_misrepresentation",
        "idle_execution",
        "cut_answers",
    ]


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat todo.py test_todo.py", ["todo.py", "test_todo.py"]),
        ("cat 'my file.py' 2>&1", ["my file.py"]),
        ("python -m pytest; cat ./a/../todo.py", ["todo.py"]),
        ("cat < todo.py", ["todo.py"]),
        ("cat <todo.py >> out.txt", ["todo.py"]),
        ("cat > todo.py <<EOF", []),
        ("grep x todo.py", []),
        ("cat 'unbalanced", ["'unbalanced"]),
    ],
)
def test_files_read_by_cat(command: str, paths: list[str]) -> None:
    assert read_paths(shell(command)) == paths


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_load_trace_reads_every_event(tmp_path: Path) -> None:
    events = [{"t": 0.0, "event": "start"}, read("todo.py"), stop()]
    path = write_lines(tmp_path / "events.jsonl", [json.dumps(e) for e in events] + [""])
    assert load_trace(path) == events


def test_load_trace_drops_a_last_line_cut_short(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "events.jsonl", [json.dumps({"t": 0.0, "event": "start"}), '{"t": 1.5, "event": "resp']
    )
    assert load_trace(path) == [{"t": 0.0, "event": "start"}]


def test_load_trace_refuses_a_damaged_line_in_the_middle(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "events.jsonl", ["{broken", json.dumps(stop())])
    with pytest.raises(ResultsError, match=r"events.jsonl:1 is not a JSON event"):
        load_trace(path)


def test_load_trace_says_which_file_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="cannot read event trace .*nowhere.jsonl"):
        load_trace(tmp_path / "nowhere.jsonl")


def test_a_tampered_grading_is_labelled() -> None:
    assert failure_labels([stop()], Outcome(stop_reason="done", grading_tampered=True)) == ["grading_tampered"]


def test_a_deep_or_huge_trace_line_damages_the_trace_and_never_crashes(tmp_path: Path) -> None:
    from bench.measure.trace import EVENT_LIMIT, EventTooLarge

    deep = '{"event": "response", "usage": ' + '{"a": ' * 981 + "1" + "}" * 981 + "}"
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "start"}\n' + deep + '\n{"event": "stop", "reason": "done"}\n')
    with pytest.raises(ResultsError, match="nests deeper than 64 levels"):
        load_trace(path)
    strings = '{"event": "tool", "args": {"text": "' + "[{" * 500 + '"}}\n'  # brackets in strings do not nest
    path.write_text(strings)
    assert load_trace(path)[0]["args"]["text"].startswith("[{[{")
    path.write_text('{"event": "done_check", "planted": "' + "x" * (EVENT_LIMIT + 1) + '"}\n{"event": "stop"}\n')
    with pytest.raises(EventTooLarge, match="over the 1048576 allowed"):
        load_trace(path)


def test_odd_shapes_in_tool_events_are_no_reads_and_no_writes() -> None:
    odd = [
        {"event": "tool", "name": "read_file", "args": ["todo.py"]},
        {"event": "tool", "name": ["write_file"], "ok": True},
        {"event": "stop", "reason": "step_limit"},
    ]

    assert failure_labels(odd, Outcome()) == ["idle_execution"]


def test_a_run_cut_short_by_a_sandbox_limit_is_the_agents_failure_not_the_benchs() -> None:
    killed = [{"event": "start"}]  # the agent was killed for memory: no stop line

    assert failure_labels(killed, Outcome(stop_reason="resource_exhausted")) == ["resource_exhausted"]
    assert failure_labels(killed, Outcome()) == ["infrastructure"]
    finished = [{"event": "stop", "reason": "done"}]
    assert failure_labels(finished, Outcome(resource_exhausted=True, files_changed=1)) == ["resource_exhausted"]
