"""`run` streams a command's output and keeps only its start and end: memory does not grow with the output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agent_helpers import ROOT

from agent import prompts
from agent.shell import HeadAndTail, run_command, truncate_middle

# Runs the run tool in a fresh process and prints what it returned and the process's peak resident memory (KiB).
PROBE = """
import sys
from pathlib import Path
from agent.tools import Workspace
result = Workspace(Path(sys.argv[1]), command_timeout=120).call("run", {"command": sys.argv[2]})
status = Path("/proc/self/status").read_text()
peak_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
print(len(result.text), result.truncated, peak_kib)
print(result.text[:20] + "|" + result.text[-30:])
"""
MB = 1_000_000


def run_probe(repo: Path, command: str) -> tuple[int, bool, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo), command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    first, ends = done.stdout.split("\n", 1)
    chars, truncated, peak_kib = first.split()
    return int(chars), truncated == "True", int(peak_kib), ends


@pytest.mark.usefixtures("child_processes")
def test_100_mb_of_output_does_not_raise_the_agents_peak_memory(repo: Path) -> None:
    small = run_probe(repo, "yes 0123456789 | head -c 1000")
    big = run_probe(repo, f"yes 0123456789 | head -c {100 * MB}; echo THE-END")
    assert not small[1] and big[1] and big[0] < 8_300  # what the model gets is bounded too
    assert big[3].startswith("0123456789\n012345678") and big[3].rstrip().endswith("THE-END\n[exit code 0]")
    growth_kib = big[2] - small[2]
    print(f"peak RSS: {small[2]} KiB with 1 KB of output, {big[2]} KiB with 100 MB (+{growth_kib} KiB)")
    assert growth_kib < 10_000  # the old run held all 100 MB (and its decoded copy): +286 MB


@pytest.mark.usefixtures("child_processes")
def test_head_and_tail_count_what_falls_between(tmp_path: Path) -> None:
    output = run_command("for i in $(seq 1 50000); do echo line-$i; done", tmp_path, 60, 8_000)
    full = "".join(f"line-{i}\n" for i in range(1, 50001))
    assert output.truncated and output.exit_code == 0
    assert output.text == full[:4000] + prompts.output_cut(len(full) - 8000) + full[-4000:]


def test_text_fed_in_pieces_keeps_the_same_start_and_end() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(30_000))
    kept = HeadAndTail(1000)
    for i in range(0, len(text), 777):
        kept.add(text[i : i + 777])
    assert kept.text() == truncate_middle(text, 2000)[0]
    assert kept.text() == text[:1000] + prompts.output_cut(28_000) + text[-1000:]


@pytest.mark.usefixtures("child_processes")
def test_multibyte_characters_split_across_reads_are_not_garbled(tmp_path: Path) -> None:
    output = run_command("python3 -c \"print('é' * 100000)\"", tmp_path, 60, 8_000)
    assert "\ufffd" not in output.text and output.text.startswith("é" * 4000)


@pytest.mark.usefixtures("child_processes")
def test_a_timeout_keeps_what_was_printed_and_gives_no_exit_code(tmp_path: Path) -> None:
    output = run_command("echo started; sleep 30", tmp_path, 0.5, 8_000)
    assert output.exit_code is None and output.text == "started\n"
