"""`bench history`: the synthetic 30-night series of experiments/synthetic_nights.py, with changes planted at known
nights, and small hand-built series."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from bench.analyze.history import write_history
from bench.analyze.nights import line_up
from bench.cli import main
from bench.results.append import append_row

ROOT = Path(__file__).resolve().parents[3]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def synthetic() -> ModuleType:
    spec = importlib.util.spec_from_file_location("synthetic_nights", ROOT / "experiments" / "synthetic_nights.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    nights = tmp_path_factory.mktemp("nights")
    files = [str(path) for path in synthetic().write_nights(nights, 30, seed=7)]
    path, _ = write_history(files, nights / "history", ["completed", "wall_s", "prompt_tokens_reprocessed"], 0.01)
    return path.read_text(encoding="utf-8"), nights / "history"


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_planted_changes_are_found_at_their_nights_and_nothing_else(history: tuple[str, Path]) -> None:
    text, _ = history
    part3 = section(text, "part3")
    shifts = [line for line in part3.splitlines() if line.startswith("- ")]
    assert len(shifts) == 2, shifts
    assert shifts[0].startswith("- wall_s from 2026-11-13 (")  # planted: night 12, x1.3
    assert "(+" in shifts[0]
    assert shifts[1].startswith("- prompt_tokens_reprocessed from 2026-11-23 (")  # planted: night 22, x0.6
    assert "(-" in shifts[1]
    assert "Change points (E-Divisive, p ≤ 0.01): none." in section(text, "part2")  # the control


def test_nights_are_lined_up_by_date_with_their_version_and_infra_errors_apart(history: tuple[str, Path]) -> None:
    text, out = history
    part2 = section(text, "part2")
    assert "30 nights, 2026-11-01 to 2026-11-30." in part2
    night_8 = next(line for line in part2.splitlines() if line.startswith("| 2026-11-08 |"))
    assert "| 2 | 1 |" in night_8  # two agent runs, one infra_error run
    part3 = section(text, "part3")
    assert "◆ |" in next(line for line in part3.splitlines() if line.startswith("| 2026-11-13 |"))
    for figure in ("history-1-part2.png", "history-2-part3.png"):
        assert f"]({figure})" in text
        assert (out / figure).read_bytes().startswith(PNG_SIGNATURE)


def night(path: Path, date: str, walls: list[float], **values: str) -> str:
    for rep, wall in enumerate(walls, start=1):
        row = {"run_id": f"{date}-{rep}", "started_at": f"{date}T02:00:00+00:00", "fixture": "todo_repo"}
        row |= {"preset": "part3", "ctx": "4096", "stop_reason": "done", "wall_s": str(wall), "git_sha": "abcdef123"}
        row["flint_serving"] = "native"
        append_row(path, row | values)
    return str(path)


def test_another_gpu_starts_a_series_of_its_own_and_few_nights_tell_nothing(tmp_path: Path) -> None:
    files = [night(tmp_path / f"n{i}.csv", f"2026-11-0{i + 1}", [100, 101, 102]) for i in range(3)]
    files.append(night(tmp_path / "n3.csv", "2026-11-04", [50, 51, 52], gpu_name="NVIDIA L4"))
    assert [len(nights) for nights in line_up(files).values()] == [3, 1]
    text = write_history(files, tmp_path / "out", ["wall_s"], 0.01)[0].read_text(encoding="utf-8")
    names = "todo_repo · part3 · ctx 4096 · no flint_model · no jeff_model"
    assert f"## {names} · no gpu_name\n" in text and f"## {names} · gpu_name NVIDIA L4\n" in text
    assert "Change points: too few nights to tell (E-Divisive needs 6)." in text


def test_the_command_writes_beside_the_files_and_refuses_unknown_metrics(tmp_path: Path) -> None:
    files = [night(tmp_path / f"n{i}.csv", f"2026-11-0{i + 1}", [100, 101]) for i in range(2)]
    assert main(["history", *files]) == 0
    assert (tmp_path / "history-report" / "history.md").exists()
    assert main(["history", *files, "--metric", "speed"]) == 2


def test_files_named_alike_are_told_apart_by_their_folders(tmp_path: Path) -> None:
    files = []
    for i, folder in enumerate(["mon", "tue", "wed"]):
        (tmp_path / folder).mkdir()
        files.append(night(tmp_path / folder / "r.csv", f"2026-11-0{i + 1}", [100, 101, 102]))
    (nights,) = line_up(files).values()
    assert [n.label for n in nights] == ["mon/r.csv", "tue/r.csv", "wed/r.csv"]  # not three times "r.csv"
