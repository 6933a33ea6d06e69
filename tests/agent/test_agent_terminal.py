"""What a person sees is what runs: the y/N question and the console lines, rendered as a terminal renders them
(pyte, a VT emulator), show a command's control characters escaped, so a command cannot pass itself off as another.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest
from agent_helpers import ROOT, read_events

from agent.console import describe, legible, visible
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

PREFIX = "The agent wants to run: "
# Shown raw, the carriage return takes the cursor back and the rest of the line is written over what came before.
SPOOF = "touch ../owned; #\r" + PREFIX + "ls -la" + " " * 40
HIDDEN = "rm -rf ../x \x1b[8mhidden\x1b[0m \x1b[2K\u202etxt.exe"


def render(data: bytes, columns: int = 200, lines: int = 40) -> list[str]:
    """The screen a VT100-like terminal shows after `data`, line by line, trailing blanks removed."""
    screen = pyte.Screen(columns, lines)
    stream = pyte.ByteStream(screen)
    stream.feed(data.replace(b"\n", b"\r\n"))  # as the terminal's line discipline does (onlcr)
    return [line.rstrip() for line in screen.display]


def read_back(shown: str) -> str:
    """The text that visible() or legible() showed as `shown`."""
    shown = re.sub(r"\u27e8(\d+) spaces\u27e9", lambda m: " " * int(m[1]), shown)
    if "\\" not in shown:
        return shown
    named = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    pattern = r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[nrt\\])"
    return re.sub(pattern, lambda m: named.get(m[1]) or chr(int(m[1][1:], 16)), shown)


def test_shown_raw_the_command_passes_itself_off_as_another() -> None:
    """The attack this guards against: without escaping, the screen says `ls -la`."""
    assert PREFIX + "ls -la" in render(f"{PREFIX}{SPOOF}\n".encode())


def test_every_text_reads_back_exactly_from_what_is_shown() -> None:
    for text in (SPOOF, HIDDEN, "grep 'a\\|b' x.py", "a\\x1b and \x1b", "tab\there", "cat\u00a0x", "日本 é"):
        shown = visible(text)
        assert shown.isprintable() and read_back(shown) == text
    assert visible("grep 'a\\|b' x.py") == "grep 'a\\|b' x.py"  # nothing to escape: shown as it is
    padded = ("ls  x", "a" + " " * 500 + "b \\ c", "echo '\u27e83 spaces\u27e9'   x", " \t  \x1b ", PADDED)
    for text in (SPOOF, HIDDEN, *padded):
        shown = legible(text)
        assert shown.isprintable() and "  " not in shown and read_back(shown) == text


def agent_on_a_terminal(repo: Path, url: str, answer: bytes, size: tuple[int, int] = (200, 40)) -> bytes:
    """`python -m agent --approve ask` with a pseudo-terminal of `size` (columns, lines) for its input and output;
    `answer` is typed at every y/N question. Returns every byte it wrote to the terminal."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    events = repo.parent / "events.jsonl"
    args = [
        "--repo",
        str(repo),
        "--task",
        "t",
        "--flint",
        url,
        "--no-jeff",
        "--approve",
        "ask",
        "--events",
        str(events),
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "agent", *args], cwd=ROOT, stdin=terminal, stdout=terminal, stderr=terminal
    )
    os.close(terminal)
    output, answered = b"", 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([controller], [], [], 0.1)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the other end is closed: the agent has exited
                break
            output += chunk
        if output.count(b"[y/N]") > answered:
            os.write(controller, answer)
            answered += 1
        if process.poll() is not None and not select.select([controller], [], [], 0.2)[0]:
            break
    process.wait(timeout=10)
    os.close(controller)
    return output


@pytest.mark.usefixtures("child_processes")
def test_the_question_and_the_console_show_the_command_that_runs(repo: Path) -> None:
    script = [fl.tool_call("run", {"command": SPOOF}), fl.tool_call("run", {"command": HIDDEN}), fl.prose("done")]
    with FakeLlama(script) as flint:
        screen = render(agent_on_a_terminal(repo, flint.url, b"n\n"))
    events = read_events(repo.parent / "events.jsonl")
    ran = [e["command"] for e in events if e["event"] == "approval" and e["decision"] == "refused"]
    assert ran == [SPOOF, HIDDEN]
    # Each question shows exactly the command it is about, blanks at the end included.
    assert [read_back(shown) for shown in questions(screen)] == ran
    assert PREFIX + "ls -la" not in screen
    refused = [line.removeprefix("  refused by user: ") for line in screen if line.startswith("  refused by user: ")]
    assert [read_back(shown) for shown in refused] == [command[:100] for command in ran]  # console too


def questions(screen: list[str]) -> list[str]:
    """The commands the questions on `screen` show: the rows after each question's first line, joined."""
    found: list[str] = []
    for line in screen:
        if line.startswith("The agent wants to run a command of "):
            found.append("")
        elif line.startswith("| ") and found:
            found[-1] += line.removeprefix("| ")
    return found


PADDED = "ls -la" + " " * 20_000 + "; touch ../owned"  # 20,000 spaces: more than 60 rows of 200


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_a_command_padded_with_spaces_shows_its_real_text_on_the_screen(repo: Path, size: tuple[int, int]) -> None:
    with FakeLlama([fl.tool_call("run", {"command": PADDED}), fl.prose("done")]) as flint:
        output = agent_on_a_terminal(repo, flint.url, b"n\n", size)
    asked = output[: output.index(b"[y/N]") + len(b"[y/N]")]  # the screen while the question waits
    screen = render(asked, *size)
    assert any("touch ../owned" in line for line in screen), screen
    question = screen[max(i for i, line in enumerate(screen) if line.startswith("The agent wants to run")) :]
    assert question[0] == f"The agent wants to run a command of {len(PADDED)} characters:"
    assert [read_back(shown) for shown in questions(question)] == [PADDED]  # folded rows read back as the command
    assert all(len(line) < size[0] for line in question)  # nothing of it ran past the screen's width


def test_a_console_line_shows_a_padded_commands_real_text() -> None:
    """`--approve yes` and `jeff` ask nobody: the console line is what a person watching reads, so padding counts as
    long as it is shown, and a line cut for length says how long the command was."""
    line = describe({"event": "approval", "by": "flag", "decision": "run", "command": PADDED})
    assert legible((line or "").lstrip()) == f"run by flag: {legible(PADDED)}"  # ls -la⟨20000 spaces⟩; touch ../owned
    long = "echo " + "x" * 300
    cut = describe({"event": "approval", "by": "jeff", "decision": "run", "command": long}) or ""
    assert cut == f"  run by jeff: {long[:100]}… (305 characters)"
