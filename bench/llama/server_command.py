"""How a host llama-server was started, read from its process, and that command taken apart again.

Each run keeps Flint's command line in its run.json (`flint_server`), with the files it names (the forced-tools
template and grammar, written into the bench's server folder) copied into the run's own folder, where they outlive
the bench: `bench replay --against embedded` starts the same server again from it (bench/replay/targets.py), and
llama-bench measures the same build, model and settings (bench/llama/llama_bench.py).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_KEY = "flint_server"  # run.json's key: {"command": [...], "threads": N}
FILES_DIR = "flint-server"  # the copies of the files the command names, in the run's folder
FILE_FLAGS = ("--chat-template-file", "--grammar-file")
# Flags bench/llama/process.py gives every server itself (and their values), left out of a command taken apart.
OWNED_WITH_VALUE = {
    "-m",
    "--model",
    "-hf",
    "--hf-repo",
    "-c",
    "--ctx-size",
    "--host",
    "--port",
    "--slot-save-path",
    "-t",
    "--threads",
    "-np",
    "--parallel",
    "--cache-ram",
    "-cram",
    "--log-colors",
}
OWNED_ALONE = {"--metrics", "--no-webui"}


def process_command(pid: int | None) -> list[str] | None:
    """The command line of a host process (its program first); None when it cannot be read."""
    if not pid:
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part] or None


def process_environment(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if b"=" in item)
    return {name: value for name, _, value in pairs}


def record(pid: int | None, run_dir: Path) -> dict[str, Any]:
    """{RECORD_KEY: {"command": [...]}} for the run's run.json, the files it names copied into run_dir (and named
    relative to it); {} when the process cannot be read (servers the bench did not start)."""
    command = process_command(pid)
    if command is None:
        return {}
    kept = list(command)
    for i in range(1, len(kept)):
        source = Path(kept[i])
        if kept[i - 1] in FILE_FLAGS and source.is_file():
            (run_dir / FILES_DIR).mkdir(exist_ok=True)
            shutil.copyfile(source, run_dir / FILES_DIR / source.name)
            kept[i] = f"{FILES_DIR}/{source.name}"
    return {RECORD_KEY: {"command": kept}}


@dataclass(frozen=True)
class ServerCommand:
    """A recorded command taken apart: what bench/llama/process.py sets itself, and every other flag as given."""

    binary: Path
    model: str | None  # -m's file, or None (-hf: `hub`)
    hub: str | None
    ctx: int | None
    threads: int | None
    args: list[str] = field(default_factory=list)  # the rest, in order, files resolved against the run's folder

    def value(self, *flags: str) -> str | None:
        """The last value given to any of `flags` among the other flags ("--flag value" or "--flag=value")."""
        found = None
        for i, arg in enumerate(self.args):
            name, equals, inline = arg.partition("=")
            if name in flags:
                found = inline if equals else (self.args[i + 1] if i + 1 < len(self.args) else None)
        return found


def parse_command(command: list[str], run_dir: Path | None = None) -> ServerCommand:
    """Take a recorded command apart; relative file paths are the run's copies (resolved against run_dir)."""
    owned: dict[str, str] = {}
    rest: list[str] = []
    i = 1
    while i < len(command):
        arg = command[i]
        name, equals, inline = arg.partition("=")
        if name in OWNED_WITH_VALUE:
            value = inline if equals else (command[i + 1] if i + 1 < len(command) else "")
            owned[name] = value
            i += 1 if equals else 2
            continue
        if arg not in OWNED_ALONE:
            resolves = run_dir is not None and rest and rest[-1] in FILE_FLAGS and not Path(arg).is_absolute()
            rest.append(str(run_dir / arg) if resolves and run_dir is not None else arg)
        i += 1
    ctx, threads = owned.get("-c") or owned.get("--ctx-size"), owned.get("-t") or owned.get("--threads")
    return ServerCommand(
        binary=Path(command[0]),
        model=owned.get("-m") or owned.get("--model"),
        hub=owned.get("-hf") or owned.get("--hf-repo"),
        ctx=int(ctx) if ctx and ctx.isdigit() else None,
        threads=int(threads) if threads and threads.lstrip("-").isdigit() else None,
        args=rest,
    )
