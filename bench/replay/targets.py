"""Where `bench replay --against` sends a run's requests: a llama-server at a URL, or one started here (`embedded`)
the way the run's Flint was started (run.json's `flint_server`, bench/llama/server_command.py), with another
binary (`--llama-server`), another model (`--model`) or more flags (`--server-args`, added after the run's own:
a flag given again wins, as in llama-server).

A run from before its command line was recorded gets the small model and, when it was served forced tool calls,
the template and a grammar written again for its fixture; `Settings.note` says so, since that grammar may not be
the one the run was served (it named every fixture of its bench).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.errors import ConfigError, PrerequisiteError
from bench.fixtures.fixture import load_fixture
from bench.llama.binaries import find_small_model
from bench.llama.forced_tools import FORCED, write_serving_files
from bench.llama.process import LlamaProcess
from bench.llama.server_command import FILE_FLAGS, RECORD_KEY, parse_command
from bench.replay.recorded import RecordedRun
from bench.server_args import check_owned_flags, parse_server_args
from bench.servers.base import default_threads

EMBEDDED = "embedded"


def split_server_args(text: str) -> list[str]:
    """`--server-args "..."` as llama-server's arguments, split as `bench run`'s --flint-server-args is, and refused
    in one line where they name a flag the replay sets itself (the model, the window, the port, ...)."""
    args = parse_server_args(text, "--server-args")
    check_owned_flags(args, "flint", "--server-args")
    return args


@dataclass(frozen=True)
class Target:
    """One server set-up the runs are replayed against."""

    label: str
    url: str | None = None  # someone else's server; None: embedded
    llama_server: Path | None = None  # embedded: another binary than the run's
    model: Path | None = None  # embedded: another model than the run's
    server_args: tuple[str, ...] = ()  # embedded: flags after the run's own


def targets(against: list[str], llama_servers: list[str], model: str | None, server_args: list[str]) -> list[Target]:
    """Every set-up to replay against, the first the baseline of the comparison: each URL, and `embedded` once per
    --llama-server and per --server-args given (once with the run's own when neither is)."""
    found = []
    binaries: list[Path | None] = [Path(p) for p in llama_servers] or [None]
    flag_sets = [tuple(split_server_args(a)) for a in server_args] or [()]
    for where in against:
        if where != EMBEDDED:
            if not where.startswith(("http://", "https://")):
                raise ConfigError(f"--against {where!r}: a llama-server's URL (http://HOST:PORT) or 'embedded'")
            found.append(Target(where, url=where))
            continue
        for binary in binaries:
            if binary is not None and not binary.is_file():
                raise ConfigError(f"--llama-server {binary}: no such file")
            for flags in flag_sets:
                parts = [EMBEDDED, *([str(binary)] if binary and len(binaries) > 1 else []), *flags]
                found.append(
                    Target(
                        label=" ".join(parts),
                        url=None,
                        llama_server=binary,
                        model=Path(model) if model else None,
                        server_args=flags,
                    )
                )
    return found


@dataclass(frozen=True)
class Settings:
    """How to start the server for one run."""

    binary: Path | None  # None: the installed llama-server
    model: Path
    ctx: int
    threads: int | None
    args: tuple[str, ...]
    note: str = ""  # how far these are the run's own

    def key(self) -> tuple[object, ...]:
        """Runs with equal keys share one server (files compared by content, not by path)."""
        args = [_file_hash(a) if i and self.args[i - 1] in FILE_FLAGS else a for i, a in enumerate(self.args)]
        return self.binary, self.model, self.ctx, self.threads, tuple(args)


def settings(run: RecordedRun, target: Target, folder: Path, checkout: Path) -> Settings:
    """The run's own server, changed as `target` says; files a run from before the record needs go to `folder`
    (written from `checkout`'s fixtures and template when its own fixtures root is not here)."""
    recorded = run.info.get(RECORD_KEY)
    command = recorded.get("command") if isinstance(recorded, dict) else None
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        parsed = parse_command(command, run.folder)
        model = target.model or (Path(parsed.model) if parsed.model else None)
        if model is None:
            raise PrerequisiteError(f"{run.name}: Flint was started from a hub reference ({parsed.hub}): pass --model")
        binary = target.llama_server or (parsed.binary if parsed.binary.is_file() else None)
        note = "" if binary or target.llama_server else f"{parsed.binary} is gone: the installed llama-server serves"
        ctx = parsed.ctx or run.n_ctx or 4096
        return Settings(
            binary=binary,
            model=model,
            ctx=ctx,
            threads=parsed.threads,
            args=(*parsed.args, *target.server_args),
            note=note,
        )
    return _settings_before_record(run, target, folder, checkout)


def _settings_before_record(run: RecordedRun, target: Target, folder: Path, checkout: Path) -> Settings:
    small = find_small_model()
    if target.model is None and run.info.get("flint_model") not in (None, small.name):
        raise PrerequisiteError(f"{run.name}: its run.json does not say how Flint was started: pass --model")
    ctx = run.n_ctx or 4096
    args: list[str] = []
    moved = ""
    if run.info.get("flint_serving") == FORCED:
        recorded_root = run.info.get("fixtures_root")
        root = Path(str(recorded_root)) if recorded_root else checkout
        if not root.is_dir():  # recorded on another machine or checkout: this checkout's own
            moved, root = f" (its fixtures root {root} is not here: this checkout's)", checkout
        fixture = load_fixture(str(run.info.get("fixture")), root)
        args = write_serving_files(folder / f"{run.name}-serving", ctx, [fixture], checkout).llama_args()
    note = "its run.json does not record Flint's command line: started with the small model, the default threads"
    note += f" and a grammar written again for its fixture{moved}" if args else ""
    return Settings(
        binary=target.llama_server,
        model=target.model or small,
        ctx=ctx,
        threads=default_threads(),
        args=(*args, *target.server_args),
        note=note,
    )


@contextmanager
def started(settings: Settings, log_dir: Path) -> Iterator[LlamaProcess]:
    server = LlamaProcess(
        settings.model,
        settings.ctx,
        log_dir / "replay-server.log",
        extra_args=settings.args,
        threads=settings.threads,
        server=settings.binary,
        who="replay",
    )
    with server:
        yield server


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="agentbench-replay-") as folder:
        yield Path(folder)


def _file_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return path
