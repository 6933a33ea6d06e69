"""Running a shell command with bounded memory: its output is streamed, and only its start and end are kept.

A command can print without end (`cat /dev/zero`, a runaway test). The agent reads the output as it comes, keeps
the first and the last `limit // 2` characters and counts the rest, so its memory does not grow with the output.
A command that runs past its timeout is killed with everything in its session (agent/reaper.py); with
`kill_leftovers` (the done check), also with whatever it started that left the session. Given the run's
`Leftovers`, a command's session is recorded there, so that what it leaves running is ended before the next done
check.

Commands run in the agent's environment, with git held to the repository's own `.git`: it never looks for one in a
folder above the command's (GIT_CEILING_DIRECTORIES), and variables that point it at another repository are left out.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent import prompts, reaper
from agent.command_user import drop_to_command_user

CHUNK_BYTES = 65_536
EXIT_POLL_SECONDS = 0.05
DRAIN_SECONDS = 1.0  # after a kill, how long to wait for what is left in the pipe (part of the timeout's margin)
GIT_LOCATIONS = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE"}
    | {"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}
)


@dataclass(frozen=True)
class CommandOutput:
    text: str  # stdout and stderr together; when longer than the limit, the start and end with a note between
    exit_code: int | None  # None: killed at the timeout
    truncated: bool


class HeadAndTail:
    """Keeps the first and last `half` characters of a stream of text, and counts what falls between."""

    def __init__(self, half: int) -> None:
        self.half = half
        self.head = ""
        self.tail = ""
        self.dropped = 0

    def add(self, text: str) -> None:
        if len(self.head) < self.half:
            room = self.half - len(self.head)
            self.head += text[:room]
            text = text[room:]
        self.tail += text
        if len(self.tail) > self.half:
            self.dropped += len(self.tail) - self.half
            self.tail = self.tail[-self.half :] if self.half else ""

    def text(self) -> str:
        if self.dropped == 0:
            return self.head + self.tail
        return self.head + prompts.output_cut(self.dropped) + self.tail


def truncate_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep the start and the end of `text` (where errors and summaries are), with a note in between."""
    kept = HeadAndTail(limit // 2)
    kept.add(text)
    return kept.text(), kept.dropped > 0


def shell() -> str:
    """The shell commands run in (and the one that expands globs for the rule: agent/shell_words.py)."""
    return shutil.which("bash") or "/bin/sh"


def command_environment(cwd: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment (or `base`) for a command in `cwd`, with git confined to `cwd`'s own repository."""
    env = {name: value for name, value in (os.environ if base is None else base).items() if name not in GIT_LOCATIONS}
    env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(os.path.realpath(cwd))
    return env


def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    limit: int,
    *,
    kill_leftovers: bool = False,
    leftovers: reaper.Leftovers | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandOutput:
    """`bash -c command` in `cwd`, stdout and stderr together, at most about `limit` characters kept.
    `kill_leftovers`: when it ends, also end whatever it started that is still running, even what left its session
    (agent/reaper.py); the done check wants that, a `run` command leaves its background jobs to `leftovers`.
    `env`: the environment to start from instead of the agent's (the done check's own, agent/check_python.py)."""
    with reaper.Contained() if kill_leftovers else contextlib.nullcontext() as contained:
        proc = subprocess.Popen(
            [shell(), "-c", command],
            cwd=cwd,
            env=command_environment(cwd, env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a timeout (or Ctrl-C here) can kill the command and everything it started
            preexec_fn=drop_to_command_user(),  # the model's commands run as another user than the agent, when set
        )
        if leftovers is not None:
            leftovers.started(proc.pid)
        try:
            return _run(proc, timeout, limit, contained)
        finally:
            if leftovers is not None:
                leftovers.finished()


def _run(
    proc: subprocess.Popen[bytes], timeout: float, limit: int, contained: reaper.Contained | None
) -> CommandOutput:
    assert proc.stdout is not None
    kept = HeadAndTail(limit // 2)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    deadline = time.monotonic() + timeout
    try:
        exit_code = None
        # Contained, the command is over when its shell is, even if something it left holds the output open.
        if _read_until(proc, kept, decoder, deadline, until_exit=contained is not None):
            with contextlib.suppress(subprocess.TimeoutExpired):  # the output ended but the shell goes on
                exit_code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        if exit_code is None or contained is not None:
            _kill_all(proc, contained)
            _read_until(proc, kept, decoder, time.monotonic() + DRAIN_SECONDS)  # what is left in the pipe
        kept.add(decoder.decode(b"", final=True))
    except BaseException:
        _kill_all(proc, contained)
        raise
    finally:
        proc.stdout.close()
        if proc.poll() is None:  # the shell outlived its pipe (something else held it open)
            _kill_all(proc, contained)
            proc.wait()
        if contained is not None:
            contained.kill_all(proc.pid)
    return CommandOutput(kept.text(), exit_code, kept.dropped > 0)


def _read_until(
    proc: subprocess.Popen[bytes],
    kept: HeadAndTail,
    decoder: codecs.IncrementalDecoder,
    deadline: float,
    until_exit: bool = False,
) -> bool:
    """Read the output into `kept` until it ends, or (`until_exit`) the shell has exited, (True) or the deadline
    passes (False)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if not selector.select(min(remaining, EXIT_POLL_SECONDS) if until_exit else remaining):
                if until_exit and proc.poll() is not None:
                    return True
                continue
            chunk = os.read(fd, CHUNK_BYTES)
            if not chunk:
                return True
            kept.add(decoder.decode(chunk))


def _kill_all(proc: subprocess.Popen[bytes], contained: reaper.Contained | None) -> None:
    """Kill the command's session (its shell's pid is the session id), and what it left behind when contained."""
    if contained is not None:
        contained.kill_all(proc.pid)
    else:
        reaper.kill_session(proc.pid)
