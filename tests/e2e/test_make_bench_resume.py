"""`make bench`, Ctrl-C in the middle of a run, then the command the bench printed to continue (`make bench ...
RESUME=1`, with no OUT=): the same results file is continued, the rows written before the Ctrl-C are kept byte for
byte, and every planned run ends with exactly one row. As a user meets it: make's own target, the embedded CPU
llama-server with the small model forced to call tools, the default results folder, and SIGINT sent to the whole
foreground process group as a terminal sends it. The suite's small task (tests/small_task.py) in local sandboxes keeps
each run to a few seconds of tools; its matrix (fixture calc from the tests' own folder) is no user's."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import small_task

from bench.results.append import read_rows

pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.usefixtures("child_processes")]
ROOT = Path(__file__).resolve().parents[2]
MATRIX = ["CTX=4096", "REPS=3", f"FIXTURES={small_task.NAME}", f"FIXTURES_ROOT={small_task.ROOT}", "PRESETS=part3"]
MATRIX += ["MAX_STEPS=2", "SANDBOX=local", "SERVERS=embedded"]


def results_file(output: str) -> Path:
    found = re.search(r"^bench: \d+ runs -> (\S+\.csv)", output, flags=re.M)
    assert found, output[-3000:]
    return Path(found.group(1))


def interrupted_during_run_two() -> tuple[int, str]:
    """make bench started in a session of its own; SIGINT to its group when run 2 has answered its first step."""
    lines = []
    with subprocess.Popen(
        ["make", "bench", *MATRIX],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as make:
        assert make.stdout is not None
        for line in make.stdout:
            lines.append(line)
            if re.match(r"run 2/3 .*: step 1", line):
                os.killpg(make.pid, signal.SIGINT)
        return make.wait(timeout=300), "".join(lines)


def test_ctrl_c_then_the_printed_command_continues_the_same_file_and_loses_no_row() -> None:
    started, said = time.time(), ""
    code, output = interrupted_during_run_two()
    out = results_file(output)
    try:
        assert code != 0 and "interrupted; rows already written are kept" in output, output[-3000:]
        before = read_rows(out)
        assert [row["rep"] for row in before] == ["1"], output[-3000:]  # run 2 was cut short: no row of it
        kept = out.read_bytes()
        to_continue = re.search(r"to continue: (make bench .*)$", output, flags=re.M)
        assert to_continue, output[-3000:]
        command = shlex.split(to_continue.group(1))
        assert "RESUME=1" in command and not any(word.startswith("OUT=") for word in command)

        resumed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
        said = resumed.stdout + resumed.stderr
        assert resumed.returncode == 0, said[-3000:]
        assert f"continuing {out}, the newest unfinished file of this matrix (1 of 3 runs)" in said
        assert results_file(said) == out
        rows = read_rows(out)
        assert out.read_bytes().startswith(kept)  # the rows from before the Ctrl-C, byte for byte
        assert sorted(row["rep"] for row in rows) == ["1", "2", "3"]  # each planned run once: none lost, none twice
        assert all(row["stop_reason"] == "step_limit" and row["error"] == "" for row in rows), rows
        assert all(row["floor_method"] == "llama-bench" and row["floor_depths"] == "0 2048" for row in rows)
        for row in rows:  # the figures, for whoever runs it with -s
            print(row["rep"], row["wall_s"], row["floor_s"], row["efficiency"], row["floor_depths"], row["steps"])
    finally:  # what the two benches wrote in the checkout's results folder: the file, its log, its runs' folders
        for path in out.parent.glob(out.name + "*"):
            path.unlink()
        for instance in re.findall(r"^bench: instance (\w+) ", output + said, flags=re.M):
            shutil.rmtree(out.parent / "runs" / "servers" / instance, ignore_errors=True)
        for folder in (out.parent / "runs").glob(f"*-{small_task.NAME}-part3-4096-r*"):
            if folder.stat().st_mtime >= started:
                shutil.rmtree(folder)
