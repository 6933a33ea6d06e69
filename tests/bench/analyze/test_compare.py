"""`bench compare`: hand-built results files, and every figure, p-value and verdict the command prints."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bench.analyze.compare import compare
from bench.analyze.gates import Gate, parse_gate
from bench.cli import main
from bench.errors import ConfigError, ResultsError
from bench.results.schema import COLUMNS

Capture = pytest.CaptureFixture[str]
TOO_FEW_3_3 = "too few runs to tell (3 vs 3 runs cannot go below p = 0.10; needs 4 vs 4)"


def run_row(run_id: str, **values: str) -> dict[str, str]:
    base = {
        "run_id": run_id,
        "started_at": "2026-11-30T02:00:00+00:00",
        "fixture": "todo_repo",
        "preset": "part3",
        "ctx": "8192",
        "flint_model": "flint.gguf",
        "jeff_model": "jeff.gguf",
        "flint_serving": "native",
        "flint_model_sha256": "f" * 64,
        "server_build": "b4000",
        "gpu_name": "NVIDIA H200",
        "gpu_mem_method": "nvml_device_v2+process_v3",
        "sandbox": "docker",
        "stop_reason": "done",
        "hidden_passed": "6",
        "hidden_total": "6",
    }
    return {**base, **values}


def write_results(path: Path, rows: list[dict[str, str]]) -> str:
    columns = [*COLUMNS, *(c for row in rows for c in row if c not in COLUMNS)]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(columns)))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def runs(prefix: str, walls: list[float], **values: str) -> list[dict[str, str]]:
    return [run_row(f"{prefix}{i}", wall_s=str(wall), **values) for i, wall in enumerate(walls)]


def table_line(text: str, group: str, name: str, nth: int = 0) -> str:
    """The line of one figure in one group's tables (nth: 0 the values table, 1 the first changes table)."""
    section = text.split(f"## {group}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith(f"| {name} |")][nth]


@pytest.fixture
def old_and_new(tmp_path: Path) -> tuple[str, str]:
    part2 = {"preset": "part2"}
    old = [
        run_row("a1", **part2, stop_reason="server_error", hidden_passed="3", wall_s="30"),
        run_row("a2", **part2, stop_reason="server_error", wall_s="40", prompt_tokens_reprocessed="11000"),
        run_row("a3", **part2, wall_s="50.5", prompt_tokens_reprocessed="10000"),
        *runs("b", [124, 231, 96], prompt_tokens_reprocessed="15000"),
    ]
    new = [
        run_row("c1", **part2, wall_s="100", prompt_tokens_reprocessed="9500"),
        run_row("c2", **part2, wall_s="", prompt_tokens_reprocessed="10500"),
        run_row("c3", **part2, stop_reason="step_limit", hidden_passed="2", wall_s="110"),
        run_row("d1", wall_s="120", prompt_tokens_reprocessed="15000"),
        run_row("d2", stop_reason="step_limit", hidden_passed="0", wall_s="200", prompt_tokens_reprocessed="20000"),
    ]
    return write_results(tmp_path / "old.csv", old), write_results(tmp_path / "new.csv", new)


def test_values_side_by_side_then_changes_with_interval_p_and_verdict(old_and_new: tuple[str, str]) -> None:
    text, tripped = compare(old_and_new)
    assert not tripped
    assert "# Compare: old.csv → new.csv" in text
    assert "|  | old.csv | new.csv |" in text
    assert table_line(text, "part2", "runs") == "| runs | 3 | 3 |"
    assert table_line(text, "part2", "completed") == "| completed | 1 of 3 | 2 of 3 |"
    assert table_line(text, "part2", "hidden passed") == "| hidden passed | 3, 6, 6 | 6, 6, 2 |"
    assert (
        table_line(text, "part2", "stop reasons") == "| stop reasons | server_error 2, done 1 | done 2, step_limit 1 |"
    )
    # 30, 40, 50.5 -> 40 [30–50.5]; the unmeasured wall time of c2 is left out, not read as 0.
    assert table_line(text, "part2", "wall_s") == "| wall_s | 40 [30–50.5] | 105 [100–110] |"
    assert "| new.csv vs old.csv | change | 95% interval | p | verdict |" in text
    # every new run slower than every old one: 3 vs 2 runs can reach no lower p than 2 / C(5, 2) = 0.2
    wall = table_line(text, "part2", "wall_s", 1)
    assert wall.startswith("| wall_s | +65 (+162.5%) | ")
    assert wall.endswith("| 0.20 | too few runs to tell (3 vs 2 runs cannot go below p = 0.20; needs 4 vs 4) |")
    completed = table_line(text, "part2", "completed", 1)
    assert completed.startswith("| completed | +33 pp | ") and completed.endswith(f"| 1.00 | {TOO_FEW_3_3} |")


def test_enough_runs_tell_a_change_from_noise(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [100, 104, 98, 101, 99, 103]))
    slower = write_results(tmp_path / "slower.csv", runs("b", [130, 128, 135, 131, 127, 133]))
    same = write_results(tmp_path / "same.csv", runs("c", [102, 97, 100, 105, 99, 101]))
    text, _ = compare([old, slower, same])
    title = "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf"
    slower_line = table_line(text, title, "wall_s", 1)
    assert slower_line.startswith("| wall_s | +30 (+29.9%) | +26% to +34% |")  # the rank test turned around
    assert slower_line.endswith("| 0.0022 | beyond noise |")  # 2 / C(12, 6): the smallest p 6 vs 6 can reach
    assert table_line(text, title, "wall_s", 2).endswith("| 0.98 | within noise |")


def test_one_fast_outlier_does_not_hide_a_slowdown_of_every_other_run(tmp_path: Path) -> None:
    """The old rule (ranges overlap = noise) let this +70% median pass; the rank test does not."""
    old = write_results(tmp_path / "old.csv", runs("a", [100, 101, 102, 103, 104, 105, 106, 107]))
    new = write_results(tmp_path / "new.csv", runs("b", [170, 171, 172, 173, 174, 175, 176, 50]))
    assert main(["compare", old, new, "--fail-on", "wall_s:25"]) == 1


def test_one_run_flipping_between_three_run_files_does_not_fail_the_gate(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [10, 11, 12]))
    new = write_results(tmp_path / "new.csv", [*runs("b", [10, 11]), run_row("b3", hidden_passed="5", wall_s="12")])
    assert main(["compare", old, new, "--fail-on", "completed"]) == 0
    out = capsys.readouterr().out
    assert "indeterminate  completed worse by more than 0 pp at p ≤ 0.05 in" in out  # neither passed nor failed
    assert "-33 pp, interval unbounded (too few runs), p = 1.00; indeterminate: 3 vs 3 runs can detect no change" in out


def test_a_completion_drop_that_many_runs_show_fails(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [10] * 8))
    new = write_results(tmp_path / "new.csv", runs("b", [10] * 8, hidden_passed="2"))
    assert main(["compare", old, new, "--fail-on", "completed"]) == 1
    assert "FAIL  completed worse by more than 0 pp at p ≤ 0.05" in capsys.readouterr().out


def test_runs_of_different_setups_are_never_mixed(tmp_path: Path) -> None:
    mixed = [*runs("a", [10, 11]), *runs("g", [20, 21], gpu_name="NVIDIA L4")]
    old = write_results(tmp_path / "old.csv", mixed)
    new = write_results(tmp_path / "new.csv", runs("b", [12, 13], server_build="b4100"))
    text, _ = compare([old, new])
    # old.csv holds two GPUs for the same names: a group each, never one median over both
    assert (
        "## todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf · server_build b4000 · gpu_name NVIDIA H200\n" in text
    )
    assert (
        "## todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf · server_build b4000 · gpu_name NVIDIA L4\n" in text
    )


def test_a_setup_that_differs_between_files_is_said_in_the_heading(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [10, 11], gpu_mem_method="nvml_device_v2+process_v3; 1 note"))
    new = write_results(tmp_path / "new.csv", runs("b", [12, 13], server_build="b4100", flint_model_sha256="e" * 64))
    text, _ = compare([old, new])
    heading = (
        "## todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf — differs: server_build b4000 (old.csv) vs "
        "server_build b4100 (new.csv); flint_model_sha256 ffffffffffff (old.csv) vs flint_model_sha256 eeeeeeeeeeee "
        "(new.csv)"
    )
    assert heading + "\n" in text  # the memory method's notes after ";" are not a different method
    assert "gpu_mem_method nvml_device_v2+process_v3" in text.split("\n## ")[0]


def test_infra_errors_are_their_own_count_outside_shares_and_medians(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [10, 11, 12]))
    killed = run_row("b4", stop_reason="infra_error", wall_s="1800", hidden_passed="", hidden_total="")
    new = write_results(tmp_path / "new.csv", [*runs("b", [10, 11, 12]), killed])
    text, _ = compare([old, new])
    title = "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf"
    assert table_line(text, title, "runs") == "| runs | 3 | 3 |"
    assert table_line(text, title, "infra_error runs") == "| infra_error runs | 0 | 1 |"
    assert table_line(text, title, "completed") == "| completed | 3 of 3 | 3 of 3 |"
    assert table_line(text, title, "wall_s") == "| wall_s | 11 [10–12] | 11 [10–12] |"
    assert main(["compare", old, new, "--fail-on", "infra"]) == 1
    assert "FAIL  infra_error runs above 0% in" in capsys.readouterr().out
    assert main(["compare", old, new, "--fail-on", "infra:30"]) == 0


def test_unconfirmed_reprocessed_figures_are_marked_and_left_out(tmp_path: Path) -> None:
    old = write_results(
        tmp_path / "old.csv", runs("a", [10, 11, 12], prompt_tokens_reprocessed="900", reprocessed_check="ok")
    )
    new_rows = runs("b", [10, 11], prompt_tokens_reprocessed="1000", reprocessed_check="ok")
    new_rows.append(run_row("b3", wall_s="12", prompt_tokens_reprocessed="99999", reprocessed_check="mismatch"))
    new = write_results(tmp_path / "new.csv", new_rows)
    text, _ = compare([old, new])
    title = "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf"
    assert table_line(text, title, "reprocessed check") == "| reprocessed check | ok 3 | ok 2, mismatch 1 |"
    line = table_line(text, title, "prompt_tokens_reprocessed")
    assert line == "| prompt_tokens_reprocessed | 900 [900–900] | 1,000 [1,000–1,000]; 1 mismatch left out |"
    assert table_line(text, title, "prompt_tokens_reprocessed", 1).startswith(
        "| prompt_tokens_reprocessed | +100 (+11.1%)"
    )


def test_a_pooled_baseline_can_show_what_yesterday_alone_cannot(tmp_path: Path, capsys: Capture) -> None:
    nights = []
    for night, walls in enumerate([[100, 103, 98], [101, 97, 104], [99, 102, 100], [103, 98, 101], [100, 99, 102]]):
        date = f"2026-11-{night + 10}T02:00:00+00:00"
        nights.append(write_results(tmp_path / f"nightly-{night}.csv", runs(f"n{night}-", walls, started_at=date)))
    other_gpu = runs("x", [50, 50, 50], gpu_name="NVIDIA L4", started_at="2026-11-16T02:00:00+00:00")
    nights.append(write_results(tmp_path / "nightly-5.csv", other_gpu))  # newest, but another configuration
    tonight = write_results(
        tmp_path / "tonight.csv", runs("t", [125, 128, 123], started_at="2026-11-20T02:00:00+00:00")
    )
    assert main(["compare", nights[-2], tonight, "--fail-on", "wall_s:10"]) == 0  # 3 vs 3 runs: cannot tell
    assert main(["compare", *nights, tonight, "--fail-on", "wall_s:10", "--pool-last", "4"]) == 1
    out = capsys.readouterr().out
    assert "Baseline: 12 runs from 4 files (nightly-1.csv, nightly-2.csv, nightly-3.csv, nightly-4.csv)." in out
    assert "|  | baseline (last 4 files) | tonight.csv |" in out
    assert "FAIL  wall_s worse by more than 10% at p ≤ 0.05 in" in out
    assert ", p = 0.0044" in out  # 2 / C(15, 3): every run tonight slower than every run of the baseline


@pytest.mark.parametrize(
    ("text", "gate"),
    [
        ("wall_s", Gate("wall_s", 10.0)),
        ("wall_s:20", Gate("wall_s", 20.0)),
        ("completed", Gate("completed", 0.0)),
        ("hidden_passed", Gate("hidden_passed", 0.0)),
        ("infra", Gate("infra", 0.0)),
        ("peak_gpu_mib_flint:2.5", Gate("peak_gpu_mib_flint", 2.5)),
    ],
)
def test_gate_defaults_and_thresholds(text: str, gate: Gate) -> None:
    assert parse_gate(text) == gate


@pytest.mark.parametrize(
    ("text", "message"), [("speed", "unknown metric 'speed'"), ("wall_s:-5", ">= 0"), ("wall_s:x", ">= 0")]
)
def test_bad_gates_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_gate(text)


def test_bad_alpha_is_refused(old_and_new: tuple[str, str], capsys: Capture) -> None:
    assert main(["compare", *old_and_new, "--alpha", "5"]) == 2
    assert "--alpha 5.0: give a level between 0 and 1" in capsys.readouterr().err


def test_gates_skip_metrics_not_measured(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", [run_row("a", peak_gpu_mib_flint="")])
    new = write_results(tmp_path / "new.csv", [run_row("b", peak_gpu_mib_flint="13000")])
    assert main(["compare", old, new, "--fail-on", "peak_gpu_mib_flint:0"]) == 0
    assert "skip  peak_gpu_mib_flint worse by more than 0% at p ≤ 0.05 in" in capsys.readouterr().out


def test_files_with_the_same_name_are_told_apart_by_their_folders(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    first = write_results(tmp_path / "x" / "results.csv", [run_row("a")])
    second = write_results(tmp_path / "y" / "results.csv", [run_row("b")])
    text, _ = compare([first, second, first])
    assert "|  | 1:" + first + " | 2:" + second + " | 3:" + first + " |" in text
    text, _ = compare([first, second])
    assert "|  | x/results.csv | y/results.csv |" in text


def test_a_file_that_is_not_a_results_csv_is_refused(tmp_path: Path, capsys: Capture) -> None:
    bad = tmp_path / "notes.csv"
    bad.write_text("name,value\nx,1\n", encoding="utf-8")
    with pytest.raises(ResultsError, match="not a bench results CSV"):
        compare([str(bad)])
    assert main(["compare", str(bad), str(tmp_path / "missing.csv")]) == 2
    assert "bench: " in capsys.readouterr().err


def test_a_value_that_is_not_a_number_names_the_run(tmp_path: Path) -> None:
    path = write_results(tmp_path / "r.csv", [run_row("run-7", wall_s="fast")])
    with pytest.raises(ResultsError, match=r"r.csv: row 2 \(run run-7\), column wall_s: 'fast' is not a number"):
        compare([path])


def test_a_file_without_runs_is_refused(tmp_path: Path) -> None:
    empty = write_results(tmp_path / "empty.csv", [])
    with pytest.raises(ResultsError, match="empty.csv has no runs yet; run the bench first"):
        compare([empty])


def test_completion_paired_over_fixtures_counts_flips_with_mcnemars_exact_test(tmp_path: Path, capsys: Capture) -> None:
    """Ten fixtures, one run each: eight that completed stop completing. Unpaired, 10 vs 10 shares; paired, eight
    flips one way and none the other: McNemar's p = 2 / 2^8."""
    fixtures = [f"task_{i}" for i in range(10)]
    old = [run_row(f"a{i}", fixture=name, rep="1") for i, name in enumerate(fixtures)]
    new = [
        run_row(f"b{i}", fixture=name, rep="1", hidden_passed="2" if i < 8 else "6") for i, name in enumerate(fixtures)
    ]
    args = ["compare", write_results(tmp_path / "old.csv", old), write_results(tmp_path / "new.csv", new)]
    assert main([*args, "--fail-on", "completed"]) == 1
    out = capsys.readouterr().out
    assert "## Completion, paired over fixtures" in out
    assert "| part3 · ctx 8192: new.csv vs old.csv, paired over 10 fixtures | 10 | 8 | 0 | -80 pp | 0.0078 |" in out
    assert "FAIL  completed worse by more than 0 pp at p ≤ 0.05 in part3 · ctx 8192: new.csv vs old.csv, paired" in out
    assert "8 lost, 0 gained of 10 pairs, McNemar p = 0.0078" in out


def test_strict_fails_a_gate_that_has_no_baseline_of_its_configuration(tmp_path: Path, capsys: Capture) -> None:
    earlier = write_results(tmp_path / "night-1.csv", runs("a", [100, 101, 99]))
    renamed = write_results(tmp_path / "night-2.csv", runs("b", [130, 131, 129], flint_model="other.gguf"))
    gates = ["--fail-on", "wall_s:25", "--pool-last", "7"]
    assert main(["compare", earlier, renamed, *gates]) == 0  # without --strict: a skip, which passes
    assert "skip  wall_s" in capsys.readouterr().out
    assert main(["compare", earlier, renamed, *gates, "--strict"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  wall_s worse by more than 25% at p ≤ 0.05 in" in out and "no earlier run of this configuration" in out
    assert "declare it and start a new baseline" in out


def test_settings_that_change_results_are_never_pooled_and_the_heading_says_which(tmp_path: Path) -> None:
    cold = write_results(tmp_path / "t0.csv", runs("a", [100, 101, 99], sampling='{"temperature": 0.0}'))
    warm = write_results(tmp_path / "t7.csv", runs("b", [100, 101, 99], sampling='{"temperature": 0.7}'))
    text, _ = compare([cold, warm])
    assert 'differs: sampling {"temperature": 0.0} (t0.csv) vs sampling {"temperature": 0.7} (t7.csv)' in text
    mixed = write_results(
        tmp_path / "mixed.csv", [*runs("c", [100, 101], max_steps="8"), *runs("d", [50], max_steps="3")]
    )
    text, _ = compare([mixed, mixed])
    assert "· max_steps 8" in text and "· max_steps 3" in text  # one file, two step limits: two groups


def test_by_preset_gives_a_verdict_between_two_presets_of_one_file(tmp_path: Path, capsys: Capture) -> None:
    """late records its own clear_at (0.75): it follows from the preset, so the two presets still pair."""
    part3 = runs("p", [100, 104, 98, 101, 99], preset="part3", clear_at="0.5")
    rows = [*part3, *runs("l", [70, 72, 69, 71, 73], preset="late", clear_at="0.75")]
    one = write_results(tmp_path / "presets.csv", rows)
    assert main(["compare", one, "--by", "preset", "--fail-on", "wall_s:10"]) == 0  # faster: no gate trips
    out = capsys.readouterr().out
    assert "differ only in preset (and clear_at, which follows from it) compared with each other" in out
    assert "nothing to compare it with" not in out
    assert "|  | part3 | late |" in out
    line = next(line for line in out.splitlines() if line.startswith("| wall_s | -"))
    assert line.startswith("| wall_s | -29 (-29.0%) |") and line.endswith("| 0.0079 | beyond noise |")
    assert "ok    wall_s worse by more than 10% at p ≤ 0.05 in by preset: late vs part3:" in out
    assert main(["compare", one, "--by", "preset", "--fail-on", "wall_s:10", "--json"]) == 0
    assert '"against": "late vs part3"' in capsys.readouterr().out


def test_by_compares_across_files_too_and_names_each_side(tmp_path: Path) -> None:
    old = write_results(tmp_path / "a.csv", runs("a", [10, 11, 12], max_steps="12"))
    new = write_results(tmp_path / "b.csv", runs("b", [20, 21, 22], max_steps="30"))
    text, _ = compare([old, new], by="max_steps")
    assert "|  | a.csv · max_steps 12 | b.csv · max_steps 30 |" in text
    assert "| b.csv · max_steps 30 vs a.csv · max_steps 12 | change |" in text


def test_a_setting_that_is_no_key_is_refused_by_name(tmp_path: Path, capsys: Capture) -> None:
    one = write_results(tmp_path / "r.csv", runs("a", [10]))
    assert main(["compare", one, "--by", "colour"]) == 2
    err = capsys.readouterr().err
    assert "--by colour: not a setting of the comparison's key; choose from fixture, preset, ctx" in err
    assert main(["compare", one, "--by", "flint_serving"]) == 2
    assert main(["compare", one, one, "--by", "preset", "--pool-last", "2"]) == 2


def test_files_differing_only_in_an_input_say_so_first_and_are_not_gated(tmp_path: Path, capsys: Capture) -> None:
    """A change of max_steps is a change of inputs, not of code: shown, said first, gated only when --by names it."""
    old = write_results(tmp_path / "old.csv", runs("a", [100, 101, 99, 102, 100, 98], max_steps="12"))
    new = write_results(tmp_path / "new.csv", runs("b", [200, 201, 199, 202, 198, 203], max_steps="30"))
    gate = ["--fail-on", "wall_s:10"]
    assert main(["compare", old, new, *gate]) == 0
    out = capsys.readouterr().out
    first_group = out.index("\n## ")
    assert out.index("**The inputs differ**") < first_group
    assert "not gated: the inputs differ (max_steps), so the change is one of inputs, not of code" in out[:first_group]
    assert "skip  wall_s worse by more than 10% at p ≤ 0.05 in" in out and "compare --by max_steps" in out
    assert table_line(out, out[first_group + 4 :].split("\n")[0], "wall_s", 1).startswith("| wall_s | +100")
    assert main(["compare", old, new, *gate, "--strict"]) == 1  # --strict refuses it
    assert main(["compare", old, new, *gate, "--by", "max_steps"]) == 1  # named: it is the change compared
    assert "FAIL  wall_s worse by more than 10%" in capsys.readouterr().out


def test_a_new_server_build_is_a_change_of_code_and_is_gated(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [100, 101, 99, 102, 100, 98]))
    new = write_results(tmp_path / "new.csv", runs("b", [200, 201, 199, 202, 198, 203], server_build="b4100"))
    text, tripped = compare([old, new], ["wall_s:10"])
    assert tripped and "**The inputs differ**" not in text and "differs: server_build b4000" in text


def test_sub_second_figures_print_with_the_digits_of_the_change_they_gate(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [0.27, 0.26, 0.28, 0.27, 0.27, 0.26, 0.28, 0.27]))
    new = write_results(tmp_path / "new.csv", runs("b", [0.32, 0.31, 0.33, 0.32, 0.32, 0.31, 0.33, 0.32]))
    text, tripped = compare([old, new], ["wall_s:10"])
    title = "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf"
    assert tripped
    assert table_line(text, title, "wall_s") == "| wall_s | 0.27 [0.26–0.28] | 0.32 [0.31–0.33] |"
    assert table_line(text, title, "wall_s", 1).startswith("| wall_s | +0.050 (+18.5%) |")


def test_at_scale_a_cell_counts_each_value_rather_than_listing_every_run(tmp_path: Path) -> None:
    rows = [run_row(f"a{i}", hidden_passed="3" if i < 2 else "2") for i in range(150)]
    text, _ = compare([write_results(tmp_path / "big.csv", rows)])
    title = "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf"
    assert table_line(text, title, "hidden passed") == "| hidden passed | 2 ×148, 3 ×2 |"


def test_a_completed_gate_on_runs_that_never_completed_says_it_cannot_drop(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", runs("a", [10] * 4, hidden_passed="2"))
    new = write_results(tmp_path / "new.csv", runs("b", [10] * 4, hidden_passed="2"))
    assert main(["compare", old, new, "--fail-on", "completed"]) == 0
    assert "ok    completed worse by more than 0 pp" in capsys.readouterr().out
    assert (
        "4 vs 4 runs: the old runs completed none, so completion cannot drop" in compare([old, new], ["completed"])[0]
    )


def test_by_agent_compares_each_agent_with_its_own_settings_in_one_file(tmp_path: Path, capsys: Capture) -> None:
    """The article's side keeps its preset and every agent its dialect: they differ in all three, and are one family."""
    mini = {"agent": "mini-swe-agent", "preset": "", "api_dialect": "chat-completions"}
    article = {"agent": "article", "preset": "part3", "api_dialect": "chat-completions"}
    rows = [*runs("p", [100, 104, 98, 101, 99], **article), *runs("m", [70, 72, 69, 71, 73], **mini)]
    one = write_results(tmp_path / "agents.csv", rows)
    assert main(["compare", one, "--by", "agent"]) == 0
    out = capsys.readouterr().out
    assert "differ only in agent (and preset, clear_at, api_dialect, which follow from it)" in out
    assert "|  | agent article·part3 | agent mini-swe-agent |" in out


def test_two_models_get_a_verdict_per_metric_by_flint_model_and_a_plain_compare_says_how(
    tmp_path: Path, capsys: Capture
) -> None:
    """Another GGUF moves flint_model and its sha256 together: `--by flint_model` pairs them, file against file."""
    qwen = {"flint_model": "qwen.gguf", "flint_model_sha256": "a" * 64}
    gemma = {"flint_model": "gemma.gguf", "flint_model_sha256": "b" * 64}
    old = write_results(tmp_path / "qwen.csv", runs("q", [100, 104, 98, 101, 99], **qwen))
    new = write_results(tmp_path / "gemma.csv", runs("g", [50, 52, 49, 51, 53], **gemma))
    assert main(["compare", old, new]) == 0
    out = capsys.readouterr().out
    assert f"These configurations differ in `flint_model`: `bench compare {old} {new} --by flint_model`" in out
    assert main(["compare", old, new, "--by", "flint_model"]) == 0
    out = capsys.readouterr().out
    assert "differ only in flint_model (and flint_model_sha256, which follows from it)" in out
    assert "|  | qwen.csv · qwen.gguf | gemma.csv · gemma.gguf |" in out
    changes = out.split("| gemma.csv · gemma.gguf vs qwen.csv · qwen.gguf | change |", 1)[1]
    for metric in ("completed", "hidden_passed", "wall_s"):
        assert f"\n| {metric} | " in changes
    assert table_line(out, "by flint_model", "wall_s", 1).endswith("| 0.0079 | beyond noise |")
    assert "nothing to compare it with" not in out


def test_a_server_flag_ab_is_compared_by_its_flags_or_the_setting_parsed_from_them(
    tmp_path: Path, capsys: Capture
) -> None:
    """FLINT_SERVER_ARGS="--cache-reuse 256" moves flint_server_args and cache_reuse: either --by pairs them, and the
    plain compare's note names the flags, which the parsed setting follows from."""
    old = write_results(tmp_path / "off.csv", runs("o", [100, 104, 98, 101, 99], cache_reuse="0"))
    flags = {"flint_server_args": "--cache-reuse 256", "cache_reuse": "256"}
    new = write_results(tmp_path / "on.csv", runs("n", [80, 82, 79, 81, 83], **flags))
    assert main(["compare", old, new]) == 0
    out = capsys.readouterr().out
    assert "not gated: the inputs differ (cache_reuse, flint_server_args)" in out
    assert "compare --by flint_server_args compares them as such" in out
    for setting in ("flint_server_args", "cache_reuse"):
        assert main(["compare", old, new, "--by", setting]) == 0
        out = capsys.readouterr().out
        assert table_line(out, f"by {setting}", "wall_s", 1).endswith("| 0.0079 | beyond noise |")
    assert "|  | off.csv · cache_reuse 0 | on.csv · cache_reuse 256 |" in out


def test_configurations_alone_by_a_setting_have_headings_that_tell_them_apart(tmp_path: Path) -> None:
    """part3 at one window and late at another: nothing pairs by preset, and each says so under its own heading."""
    rows = [*runs("p", [100, 101], preset="part3", ctx="4096"), *runs("l", [70, 71], preset="late", ctx="8192")]
    text, _ = compare([write_results(tmp_path / "r.csv", rows)], by="preset")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## ctx 4096", "## ctx 8192"]
    assert "Only one preset (part3): nothing to compare it with." in text
    assert "Only one preset (late): nothing to compare it with." in text


def test_one_file_of_two_presets_names_the_by_that_compares_them(tmp_path: Path) -> None:
    rows = [
        *runs("p", [100, 101], preset="part3", clear_at="0.5"),
        *runs("l", [70, 71], preset="late", clear_at="0.75"),
    ]
    one = write_results(tmp_path / "r.csv", rows)
    text, _ = compare([one])
    assert f"These configurations differ in `preset`: `bench compare {one} --by preset` gives verdicts" in text
    text, _ = compare([write_results(tmp_path / "one.csv", runs("a", [1, 2]))])
    assert "These configurations differ" not in text  # one configuration: nothing to pair


def test_by_preset_shows_the_summaries_and_jeffs_steps_where_a_run_has_them(tmp_path: Path, capsys: Capture) -> None:
    rows = [
        *runs("p", [100, 104, 98, 101, 99], preset="part3+", summaries="0", reprocessed_by_summary="0"),
        *runs("s", [110, 112, 109, 111, 113], preset="summary", summaries="2", reprocessed_by_summary="900"),
    ]
    one = write_results(tmp_path / "presets.csv", rows)
    assert main(["compare", one, "--by", "preset"]) == 0
    out = capsys.readouterr().out
    assert "| reprocessed_by_summary | 0 [0–0] | 900 [900–900] |" in out
    line = next(line for line in out.splitlines() if line.startswith("| reprocessed_by_summary | +900"))
    assert line.endswith("| beyond noise |")
    assert "jeff_steps" not in out and "escalations" not in out  # no run let Jeff take a step
    plain = write_results(tmp_path / "plain.csv", runs("q", [100, 101], summaries="0"))
    assert main(["compare", plain, plain]) == 0 and "summaries" not in capsys.readouterr().out
