"""The live progress as an 80-column terminal shows it (pyte, a terminal emulator): every line rewritten in place
fits, so no rewrite leaves a fragment of the one before; the workers' block is redrawn without a line twice; a
bench's output ends with its groups, its results path and the next commands."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pyte
import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.run.display import Display, LaneProgress
from bench.run.progress import MatrixClock, Progress
from bench.run.runner import Bench
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

COLUMNS = 80
LONG = "a_fixture_with_a_rather_long_name"


class Terminal(io.StringIO):
    """What a bench writes to its terminal."""

    def isatty(self) -> bool:
        return True


def screen(text: str, lines: int = 200) -> list[str]:
    """The non-blank lines a terminal of COLUMNS columns shows after `text` (its tty turns \\n into \\r\\n)."""
    shown = pyte.Screen(COLUMNS, lines)
    pyte.Stream(shown).feed(text.replace("\n", "\r\n"))
    return [line.rstrip() for line in shown.display if line.strip()]


def etas_by_finished_count(text: str) -> list[list[int]]:
    """The ETAs the lines of `text` showed in turn (seconds), one list per count of runs finished so far: a line that
    ends a run (`: step_limit, hidden 2/6, ...`) starts the next list, its own ETA counted after that run."""
    etas: list[list[int]] = [[]]
    for line in re.split(r"\r\033\[K|\n", text):
        if re.search(r": \w+, hidden [\d?]+/[\d?]+, ", line):
            etas.append([])
        if shown := re.search(r"ETA (?:(\d+):)?(\d+):(\d\d)", line):
            hours, minutes, seconds = (int(part or 0) for part in shown.groups())
            etas[-1].append(3600 * hours + 60 * minutes + seconds)
    return etas


def never_rises(values: list[int]) -> bool:
    return all(later <= earlier for earlier, later in zip(values, values[1:], strict=False))


def response(step: int) -> dict[str, object]:
    usage = {"prompt_tokens": 3000 + step, "completion_tokens": 40, "total_tokens": 3040 + step}
    return {"event": "response", "step": step, "usage": usage, "finish_reason": "tool_calls"}


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(COLUMNS))


def test_a_run_of_many_steps_leaves_one_line_and_no_fragment() -> None:
    out, now = Terminal(), [0.0]
    progress = Progress(total=2, stream=out, matrix=MatrixClock(2, now=lambda: now[0]))
    for run in (1, 2):
        progress.run_started(run, LONG, "part3", 32768, 1)
        for step in range(1, 31):
            progress.on_event(response(step))
            if step % 7 == 0:
                progress.on_event({"event": "clear", "reason": "threshold"})
            now[0] += 3
        progress.on_event({"event": "stop", "reason": "step_limit"})
        row = {"stop_reason": "step_limit", "hidden_passed": "2", "hidden_total": "6", "wall_s": "90.1"}
        progress.run_finished({**row, "error": "the hidden tests' file failed to collect: " + "x" * 200})
    shown = screen(out.getvalue())
    assert shown == [
        "run 1/2 part3 32768: step_limit, hidden 2/6, 90.1 s; ETA 1:30",
        "run 2/2 part3 32768: step_limit, hidden 2/6, 90.1 s; ETA 0:00",
    ]
    etas = etas_by_finished_count(out.getvalue())
    assert etas[0] == [] and etas[1][:4] == [90, 90, 87, 84] and etas[2] == [0]  # the end, then 3 s less a step
    assert all(never_rises(between) for between in etas)


def test_two_workers_block_shows_each_line_once() -> None:
    display, now = Display(["cpu pair 1", "cpu pair 2"], Terminal()), [0.0]
    display.matrix = MatrixClock(4, now=lambda: now[0])
    lanes = [LaneProgress(display, 0, 4), LaneProgress(display, 1, 4)]
    for first in (1, 3):
        for lane, index in zip(lanes, (first, first + 1), strict=True):
            lane.run_started(index, LONG, "late", 8192, 1)
        for step in range(1, 16):
            for lane in lanes:
                lane.on_event(response(step))
            now[0] += 2
        for lane in lanes:
            lane.run_finished({"stop_reason": "done", "hidden_passed": "6", "hidden_total": "6", "wall_s": "30.0"})
    assert isinstance(display.stream, Terminal)
    shown = screen(display.stream.getvalue())
    assert len(shown) == len(set(shown)) == 6  # four finished runs, then the block: each worker idle
    assert [line.split(" late ")[0] for line in shown[:4]] == [
        f"[cpu pair {(i - 1) % 2 + 1}] run {i}/4" for i in (1, 2, 3, 4)
    ]
    assert shown[4:] == ["[cpu pair 1] idle", "[cpu pair 2] idle"] and all(len(line) < COLUMNS for line in shown)


@pytest.mark.usefixtures("child_processes")
def test_a_bench_at_80_columns_ends_with_its_groups_results_and_next_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    settings = {"use_jeff": False, "presets": ["part3", "late"], "reps": 2, "out": str(tmp_path / "results.csv")}
    config = BenchConfig(**(settings | SETTINGS))  # type: ignore[arg-type]
    servers = FakeServers()
    Bench(
        config,
        FakeFactory(config, servers, FakeSandboxes(servers, [ScriptedRun(steps=25)] * 4), checkout=ROOT),
        checkout=ROOT,
    ).run()
    shown = screen(terminal.getvalue())
    runs = [line for line in shown if line.startswith("run ")]
    assert [line.split(" calc ")[0] for line in runs] == ["run 1/4", "run 2/4", "run 3/4", "run 4/4"]
    assert all(len(line) < COLUMNS for line in runs)  # rewritten in place: never wrapped
    etas = etas_by_finished_count(terminal.getvalue())
    assert len(etas) == 5 and sum(map(len, etas[1:4])) > 3  # four runs ended; steps of runs 2 to 4 showed an ETA
    assert all(never_rises(between) for between in etas)
    table = shown[len(runs) :]
    assert table[0].split() == [
        "configuration",
        "completed",
        "wall",
        "s",
        "steps",
        "reprocessed",
        "(failure",
        "labels",
        "below)",
    ]
    assert table[1].split() == ["part3", "0", "of", "2", "3.4", "25", "52,500"]
    assert table[2].split() == ["execution_misrepresentation", "2"]
    assert table[3].split()[:4] == ["late", "0", "of", "2"]  # its clear_at 0.75 follows from the preset: not shown
    assert all(len(line) < COLUMNS for line in table[:5])
    text = "".join(table[5:])  # the path may wrap: a line printed once, never rewritten
    assert text.startswith(f"results: {tmp_path / 'results.csv'} (4 rows, 4 from this bench)log: ")
    assert f"next: bench view {tmp_path / 'results.csv'}" in text and text.endswith("--by preset")
