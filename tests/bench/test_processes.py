"""Output kept of a child process is capped: its start and end, and a line saying how much was cut between."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.processes import CappedOutput, run_to_end


def test_output_under_the_cap_is_kept_whole() -> None:
    output = CappedOutput(100)
    for chunk in (b"a" * 30, b"b" * 30, b"c" * 40):
        output.add(chunk)
    assert output.text() == "a" * 30 + "b" * 30 + "c" * 40 and output.cut == 0


def test_output_over_the_cap_keeps_its_start_and_end_and_says_what_was_cut() -> None:
    output = CappedOutput(100)
    output.add(b"S" * 10)
    for _ in range(1000):
        output.add(b"m" * 97)
    output.add(b"E" * 10)
    text = output.text()
    assert text.startswith("S" * 10) and text.endswith("E" * 10)
    assert f"[bench: {10 + 97_000 + 10 - 100} bytes of output cut here" in text
    assert len(output.head) + len(output.tail) == 100


@pytest.mark.usefixtures("child_processes")
def test_a_flooding_child_costs_no_more_than_the_cap(tmp_path: Path) -> None:
    flood = "import sys\nfor _ in range(3000): sys.stdout.write('x' * 10000 + '\\n')\nprint('the end')"
    code, timed_out, text = run_to_end([sys.executable, "-c", flood], cwd=tmp_path, env={}, timeout_s=60)
    assert (code, timed_out) == (0, False)
    assert len(text) < 4 * 1024 * 1024 + 200 and "bytes of output cut here" in text
    assert text.rstrip().endswith("the end")
