"""`bench report`: hand-built results and traces; the numbers in report.md and the PNG files it writes."""

from __future__ import annotations

import csv
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.analyze.report import write_report
from bench.cli import main
from bench.errors import ResultsError
from bench.measure.trace import requests_of
from bench.results.schema import COLUMNS

# Each report draws its PNG plots (matplotlib): about a second of CPU per test, out of the fast tier.
pytestmark = pytest.mark.slow

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def response(step: int, prompt: int, completion: int, processed: int | None) -> dict[str, Any]:
    timings = None if processed is None else {"prompt_n": processed, "cache_n": prompt - processed}
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return {
        "t": float(step),
        "event": "response",
        "step": step,
        "usage": usage,
        "timings": timings,
        "finish_reason": "stop",
    }


def clear(step: int, reason: str = "threshold") -> dict[str, Any]:
    return {"t": float(step), "event": "clear", "step": step, "reason": reason, "total_tokens": None, "changed": 3}


REFUSED = {"t": 5.0, "event": "http_error", "step": 5, "status": 400, "type": "exceed_context_size_error"}
REFUSED |= {"n_prompt_tokens": 8300, "n_ctx": 8192}
STOP = {"t": 99.0, "event": "stop", "reason": "done", "steps": 6, "message": None}

# r1: shares anew 1.0, 0.05 | after a clearing 0.9 | 0.0476 | refused at 8,300 tokens | after a clearing 0.4
R1 = [
    {"t": 0.0, "event": "start", "preset": "part3", "n_ctx": 8192, "clear_at": 0.5},
    response(1, 1000, 200, 1000),
    response(2, 4000, 300, 200),
    clear(2),
    response(3, 2000, 100, 1800),
    {"t": 3.5, "event": "cut", "step": 3, "kind": "length", "dropped": True},
    response(4, 2100, 100, 100),
    REFUSED,  # as the agent does it: the refused request is cleared and asked again within the same step
    clear(5, "context_400"),
    response(5, 3000, 50, 1200),
    STOP,
]
# r2: 0.8 | after a clearing 0.6 | 0.01 | a response without timings, which cannot count
R2 = [response(1, 1000, 100, 800), clear(1), response(2, 1000, 100, 600), response(3, 1000, 10, 10)]
R2 += [response(4, 1000, 10, None), STOP]


def run_row(run_id: str, **values: str) -> dict[str, str]:
    base = {"run_id": run_id, "fixture": "todo_repo", "preset": "part3", "ctx": "8192", "flint_model": "f.gguf"}
    return {
        **base,
        "jeff_model": "j.gguf",
        "flint_serving": "native",
        "stop_reason": "done",
        "hidden_passed": "6",
        "hidden_total": "6",
        **values,
    }


def write_results(path: Path, rows: list[dict[str, str]], traces: dict[str, list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in COLUMNS} for row in rows)
    for run_id, lines in traces.items():
        (path.parent / "runs" / run_id).mkdir(parents=True)
        (path.parent / "runs" / run_id / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    rows = [
        run_row("r1", rep="1", clearings="2", cut_answers="1", context_400s="1", prompt_tokens_reprocessed="4300")
        | {"max_request_tokens": "8300", "wall_s": "124.4", "failure_labels": "cut_answers"}
        | {"peak_gpu_mib_flint": "13644", "peak_gpu_mib_device": "14000"},
        run_row("r2", rep="2", clearings="1", cut_answers="0", context_400s="0", prompt_tokens_reprocessed="1410")
        | {
            "max_request_tokens": "1100",
            "wall_s": "96.2",
            "peak_gpu_mib_flint": "13652",
            "peak_gpu_mib_device": "14100",
        },
        run_row("r3", rep="3", stop_reason="step_limit", hidden_passed="2", files_changed="0")
        | {"failure_labels": "idle_execution"},
        run_row("r4", rep="1", preset="part2", stop_reason="server_error", hidden_passed="3")
        | {"failure_labels": "cut_answers;server_error", "wall_s": "30"},
    ]
    traces = {
        "r1": [json.dumps(e) for e in R1],
        "r2": [json.dumps(e) for e in R2],
        "r4": ["{not json", json.dumps(STOP)],  # damaged in the middle: the report goes on without it
    }
    return write_results(tmp_path / "results.csv", rows, traces)


def test_report_tables_carry_each_runs_numbers(results: Path) -> None:
    text = write_report(results, results.parent).read_text(encoding="utf-8")
    assert "4 runs in 2 groups." in text
    assert "Same in every group: fixture todo_repo, ctx 8192, flint_model f.gguf, jeff_model j.gguf, " in text
    assert (
        "sandbox n/a, servers n/a, server_build n/a, gpu_name n/a, gpu_mem_method n/a, jeff_first_steps n/a, "
        "jeff_window n/a, agent n/a, api_dialect n/a, fixture_sha n/a" in text
    )
    assert "| part3 | 3 | 2 of 3 | 6, 6, 2 | done 2, step_limit 1 | 110 [96.2–124] | 2,855 [1,410–4,300] |" in text
    assert "| part2 | 1 | 0 of 1 | 3 | server_error 1 | 30 | n/a |" in text
    assert "| rep 1 | r1 | 6 of 6 | 2 | 1 | 1 | 4,300 | 8,300 | 124 | done | cut_answers |" in text
    assert "| rep 2 | r2 | 6 of 6 | 1 | 0 | 0 | 1,410 | 1,100 | 96.2 | done | — |" in text
    assert "| rep 3 | r3 | 2 of 6 | n/a | n/a | n/a | n/a | n/a | n/a | step_limit | idle_execution |" in text
    assert "Completed 2 of 3; hidden tests passed per run: 6, 6, 2." in text


def test_infra_errors_and_unconfirmed_reprocessed_counts_are_set_apart(tmp_path: Path) -> None:
    rows = [
        run_row("a", wall_s="100", prompt_tokens_reprocessed="1000", reprocessed_check="ok"),
        run_row("b", wall_s="120", prompt_tokens_reprocessed="1200", reprocessed_check="ok"),
        run_row("c", wall_s="110", prompt_tokens_reprocessed="88888", reprocessed_check="counter_reset"),
        run_row("d", stop_reason="infra_error", wall_s="1800", hidden_passed="", hidden_total=""),
    ]
    header = COLUMNS
    path = tmp_path / "results.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in header} for row in rows)
    text = write_report(path, tmp_path / "report").read_text(encoding="utf-8")
    overview = "| todo_repo · part3 · ctx 8192 · f.gguf · j.gguf | 3 | 1 | 3 of 3 | 6, 6, 6 | done 3 | 110 [100–120] |"
    assert overview + " 1,100 [1,000–1,200]; 1 counter_reset left out |" in text
    assert "| 88,888 (counter_reset) |" in text
    assert "1 infra_error run(s) measured nothing about the agent and are left out." in text


def test_report_counts_failure_labels_per_group(results: Path) -> None:
    text = write_report(results, results.parent).read_text(encoding="utf-8")
    part3, part2 = text.split("## part3\n")[1].split("## part2\n")
    assert "Failure labels: cut_answers 1, idle_execution 1." in part3
    assert "Failure labels: cut_answers 1, server_error 1." in part2


def test_report_sets_requests_after_a_clearing_apart(results: Path) -> None:
    text = write_report(results, results.parent).read_text(encoding="utf-8")
    assert (
        "Right after a clearing: 2 of 3 requests processed more than half of their prompt anew "
        "(lowest 40%, median 60%). Other requests: 3 of 5 processed less than a quarter anew (median 5%)."
    ) in text


def test_runs_without_a_usable_trace_get_a_note(results: Path) -> None:
    text = write_report(results, results.parent).read_text(encoding="utf-8")
    assert "- rep 3 (r3): no event trace at runs/r3/events.jsonl; its plots are empty." in text
    assert "- rep 1 (r4): " in text and "events.jsonl:1 is not a JSON event" in text
    assert "Prompt cache: no request in the traces reported timings." in text.split("## part2\n")[1]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_writes_its_plots_and_links_them(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    text = write_report(results, out).read_text(encoding="utf-8")
    pngs = sorted(path.name for path in out.glob("*.png"))
    assert pngs == ["gpu-memory.png", "group-1-part3.png", "group-2-part2.png", "outcomes.png"]
    for name in pngs:
        assert f"]({name})" in text
        width, height = png_size(out / name)
        assert width > 300 and height > 150
        assert (out / name).stat().st_size > 10_000  # a blank canvas compresses to far less
    assert png_size(out / "group-1-part3.png")[0] > png_size(out / "group-2-part2.png")[0]  # three runs side by side
    assert "| part3 | 13,648 [13,644–13,652] | 14,050 [14,000–14,100] |" in text
    assert "| group | peak MiB, Flint | peak MiB, device |" in text


def test_gpu_memory_not_measured_is_said_not_plotted(tmp_path: Path) -> None:
    rows = [run_row("a", gpu_mem_method="unavailable: no NVIDIA driver"), run_row("b", gpu_mem_method="")]
    path = write_results(tmp_path / "results.csv", rows, {"a": [json.dumps(STOP)]})
    text = write_report(path, tmp_path).read_text(encoding="utf-8")
    assert "Not measured in any run (gpu_mem_method: n/a; unavailable: no NVIDIA driver)." in text
    assert not (tmp_path / "gpu-memory.png").exists()
    assert "No request came right after a clearing." not in text  # no responses at all: nothing to say about them
    assert "Prompt cache: no request in the traces reported timings." in text


def test_report_command_writes_beside_the_csv_by_default(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(results)]) == 0
    folder = results.with_name(f"{results.stem}-report")  # its own folder: reports of other CSVs do not mix
    assert (folder / "report.md").is_file() and list(folder.glob("*.png"))
    assert f"bench: wrote {folder / 'report.md'}" in capsys.readouterr().err  # a note on stderr, not the result


def test_an_empty_results_file_is_refused(tmp_path: Path) -> None:
    path = write_results(tmp_path / "results.csv", [], {})
    with pytest.raises(ResultsError, match="has no runs yet"):
        write_report(path, tmp_path)


def test_requests_mark_the_first_answer_after_each_clearing() -> None:
    events = [response(1, 100, 5, 100), clear(1), clear(1), response(2, 90, 5, 80), response(3, 95, 5, 5)]
    assert [(r.step, r.after_clearing) for r in requests_of(events)] == [(1, False), (2, True), (3, False)]


def test_a_clearing_that_changed_nothing_does_not_count() -> None:
    idle = {**clear(1), "changed": 0}
    assert [r.after_clearing for r in requests_of([response(1, 100, 5, 100), idle, response(2, 90, 5, 2)])] == [
        False,
        False,
    ]


def test_a_prompt_size_missing_from_usage_comes_from_the_timings() -> None:
    event = {"event": "response", "step": 1, "usage": None, "timings": {"prompt_n": 30, "cache_n": 90}}
    (request,) = requests_of([event])
    assert request.prompt_tokens == 120
    assert request.share_anew == 0.25


def write_group(tmp_path: Path, runs: int, **values: str) -> Path:
    """A results file of one group of `runs` runs, each with a short trace."""
    path = tmp_path / "results.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for i in range(1, runs + 1):
            row = {"run_id": f"r{i}", "fixture": "todo_repo", "preset": "part3", "ctx": "8192", "rep": str(i)}
            writer.writerow(row | {"stop_reason": "done", "hidden_passed": "6", "hidden_total": "6", **values})
            trace = tmp_path / "runs" / f"r{i}" / "events.jsonl"
            trace.parent.mkdir(parents=True)
            events = [response(step, 1000 * step + i, 50, 900) for step in range(1, 6)] + [STOP]
            trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_hundred_run_group_is_summarised_in_a_bounded_figure_and_its_runs_paged(tmp_path: Path) -> None:
    results = write_group(tmp_path, 100)
    text = write_report(results, tmp_path / "report").read_text(encoding="utf-8")
    (figure,) = (tmp_path / "report").glob("group-1-*.png")
    assert max(png_size(figure)) <= 1000  # 100 runs drawn one by one made it 1512 x 12240 px
    assert "100 runs, summarised in the figure below; each run's numbers: [runs 1–50](" in text
    pages = sorted((tmp_path / "report").glob("*-runs-*.md"))
    assert [p.name[-9:] for p in pages] == ["runs-1.md", "runs-2.md"]
    assert "| rep 100 | r100 |" in pages[1].read_text(encoding="utf-8")
    assert "| rep 1 | r1 |" not in text  # the report itself stays short


def test_no_label_of_the_outcomes_figure_is_cut_off(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from bench.analyze.plots import plot_outcomes
    from bench.analyze.report import load_run
    from bench.results.read import read_runs

    results = write_group(tmp_path, 2)
    runs = [load_run(row, tmp_path / "runs") for row in read_runs(results)]
    title = "todo_repo · part3 · ctx 8192 · Qwen3-14B-Q4_K_M.gguf · Qwen3-0.6B-Q8_0.gguf · flint_serving forced_tools"
    fig = plot_outcomes([(title, runs)], tmp_path / "outcomes.png")
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    labels = fig.axes[0].get_yticklabels()
    assert "forced_tools" in labels[0].get_text() and "todo_repo" in labels[0].get_text()
    for text in labels:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= 0 and box.y1 <= fig.bbox.y1, text.get_text()


DONE = {"t": 9.0, "event": "stop", "reason": "done", "steps": 2, "message": None}


def test_the_report_shows_the_time_split_and_the_causes_stacked_per_step(tmp_path: Path) -> None:
    times = {
        "wall_s": "40.0",
        "flint_model_s": "20.5",
        "jeff_model_s": "4.5",
        "tools_s": "13.0",
        "server_stall_s": "1.0",
        "own_s": "1.0",
        "flint_prompt_s": "12.5",
        "flint_gen_s": "8.0",
        "server_overhead_s": "6.8",
    }
    causes = {"reprocessed_cold": "900", "reprocessed_new": "60", "reprocessed_by_clearing": "340"}
    rows = [
        run_row("r1", rep="1", **times, **causes, floor_s="18.2", efficiency="0.455", reprocessed_split="ok"),
        run_row("r2", rep="2", reprocessed_split="unavailable"),
    ]
    trace = [json.dumps(e) for e in (response(1, 900, 20, 900), response(2, 1300, 20, 400), DONE)]
    csv_path = write_results(tmp_path / "results.csv", rows, {"r1": trace, "r2": trace})
    split = [{"step": 1, "cold": 900}, {"step": 2, "new": 60, "clearing": 340}]
    (tmp_path / "runs" / "r1" / "reprocessed.json").write_text(json.dumps({"status": "ok", "requests": split}))
    report = write_report(csv_path, tmp_path / "report").read_text()
    assert (
        "| run | wall s | Flint s | prefill s | decode s | Jeff s | tools s | stalled s | own s | floor s | overhead s "
        "| efficiency |" in report
    )
    assert "| rep 1 | 40 | 20.5 | 12.5 | 8 | 4.5 | 13 | 1 | 1 | 18.2 | 6.8 | 46% |" in report
    assert "| rep 1 | 900 | 60 | n/a | 340 | n/a | n/a | n/a | ok |" in report
    assert "| rep 2 | n/a | n/a | n/a | n/a | n/a | n/a | n/a | unavailable |" in report
    (figure,) = (tmp_path / "report").glob("causes-1-*.png")
    assert figure.name in report and figure.read_bytes().startswith(PNG_SIGNATURE)


def test_a_large_groups_causes_are_one_line_of_medians_and_one_panel(tmp_path: Path) -> None:
    results = write_group(tmp_path, 20, reprocessed_cold="900", reprocessed_new="100", reprocessed_split="ok")
    for i in range(1, 21):
        split = [{"step": 1, "cold": 900}, {"step": 2, "new": 100}]
        (tmp_path / "runs" / f"r{i}" / "reprocessed.json").write_text(json.dumps({"requests": split}))
    text = write_report(results, tmp_path / "report").read_text(encoding="utf-8")
    assert "| median of 20 | 900 | 100 | n/a | n/a | n/a | n/a | n/a | ok 20 |" in text
    (figure,) = (tmp_path / "report").glob("causes-1-*.png")
    assert max(png_size(figure)) <= 1000


@pytest.mark.usefixtures("child_processes")
def test_report_and_history_leave_scipy_unimported_until_a_test_runs() -> None:
    """scipy.stats costs about a second to import: `bench report` and `bench history` need none of its tests (the
    probe's second half shows it would see the import: a rank test of few tied runs permutes them with scipy)."""
    probe = "import sys, bench.analyze.report, bench.analyze.history; print('scipy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
    probe = "import sys; from bench.analyze.stats import rank_test; rank_test([1, 2, 2], [2, 3, 4]); "
    probe += "print('scipy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "True\n"
