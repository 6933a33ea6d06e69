"""What a person sees is what runs: the y/N question and the console lines, rendered as a terminal renders them
(pyte, a VT emulator), show a command's control characters escaped, so a command cannot pass itself off as another.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pyte
import pytest
from agent_helpers import ROOT, read_events

from agent.console import visible
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

PREFIX = "The agent wants to run: "
# Shown raw, the carriage return takes the cursor back and the rest of the line is written over what came before.
SPOOF = "touch ../owned; #\r" + PREFIX + "ls -la" + " " * 40
HIDDEN = "rm -rf ../x \x1b[8mhidden\x1b[0m \x1b[2K\u202etxt.exe"


def render(data: bytes, columns: int = 200) -> list[str]:
    """The screen a VT100-like terminal shows after `data`, line by line, trailing blanks removed."""
    screen = pyte.Screen(columns, 40)
    stream = pyte.ByteStream(screen)
    stream.feed(data.replace(b"\n", b"\r\n"))  # as the terminal's line discipline does (onlcr)
    return [line.rstrip() for line in screen.display]


def read_back(shown: str) -> str:
    """The text that visible() showed as `shown`."""
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


def agent_on_a_terminal(repo: Path, url: str, answer: bytes) -> bytes:
    """`python -m agent --approve ask` with a pseudo-terminal for its input and output; `answer` is typed at every
    y/N question. Returns every byte it wrote to the terminal."""
    controller, terminal = pty.openpty()
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
    asked = [line.removeprefix(PREFIX) for line in screen if line.startswith(PREFIX)]
    # Each question shows exactly the command it is about (but for blanks at the end, which no screen shows).
    assert [read_back(shown) for shown in asked] == [command.rstrip(" ") for command in ran]
    assert PREFIX + "ls -la" not in screen
    refused = [line.removeprefix("  refused by user: ") for line in screen if line.startswith("  refused by user: ")]
    assert [read_back(shown) for shown in refused] == [command[:100].rstrip(" ") for command in ran]  # console too
