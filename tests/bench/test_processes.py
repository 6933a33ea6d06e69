"""Output kept of a child process is capped: its start and end, and a line saying how much was cut between. A
process is stopped by SIGTERM, a second SIGTERM (llama-server's "terminate immediately"), then SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.processes import CappedOutput, run_to_end, terminate


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


# Counts the SIGTERMs it gets; exits at the `exit_at`-th (0: never), as llama-server does at its second.
TERM_COUNTER = """
import signal, sys, time
got = []
def on_term(*_):
    got.append(1)
    print(len(got), flush=True)
    if len(got) == {exit_at}:
        sys.exit(1)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""


def stopped(exit_at: int, grace_s: float) -> tuple[float, int, list[str]]:
    code = TERM_COUNTER.format(exit_at=exit_at)
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        started = time.monotonic()
        terminate(lambda sig: os.kill(child.pid, sig), lambda: child.poll() is None, grace_s, again_after_s=0.3)
        status = child.wait(10)
        return time.monotonic() - started, status, child.stdout.read().split()


@pytest.mark.usefixtures("child_processes")
def test_a_process_held_by_its_first_sigterm_ends_at_the_second_well_before_the_grace() -> None:
    seconds, code, terms = stopped(exit_at=2, grace_s=30)
    assert (code, terms) == (1, ["1", "2"]) and 0.3 <= seconds < 5


@pytest.mark.usefixtures("child_processes")
def test_a_process_that_outlives_both_sigterms_is_killed_at_the_grace() -> None:
    seconds, code, terms = stopped(exit_at=0, grace_s=1.0)
    assert (code, terms) == (-signal.SIGKILL, ["1", "2"]) and 1.0 <= seconds < 5
