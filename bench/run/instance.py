"""A bench instance: its id and state file (bench.ownership), its temp folder, and the removal of what it started,
at its own end and, for a bench that was killed, at the next bench's start.

What is removed for a finished or dead instance, and how ownership is proven before anything goes:
- host processes its state file lists (the llama-servers), each only while its pid still names the process that
  started at the recorded time in this boot: a pid reused by another process is never signalled;
- its temp folder, agentbench-<id> (where every run's work copy lives: tempfile points there while it runs);
- Docker containers, networks and volumes carrying its owner label or its compose project's label;
- its firewall rules (its own interface pattern, bench.containers.names).
Another instance's things are touched only when its state file says it ran on this host, and its owner (pid and
start time, same boot) is gone. A live bench is never touched, whatever it carries.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.containers.engine import docker_client, remove_labelled
from bench.containers.names import COMPOSE_PROJECT_LABEL, OWNER_LABEL, BenchNames
from bench.containers.network import end_allow_within, end_isolation
from bench.errors import ConfigError, PrerequisiteError
from bench.ownership import OwnedProcess, Ownership
from bench.processes import is_running, kill_group, terminate

STATE_DIR_VARIABLE = "AGENTBENCH_STATE_DIR"
TEMP_PREFIX = "agentbench-"


def state_dir() -> Path:
    """Where instances keep their state files: $AGENTBENCH_STATE_DIR, else ~/.cache/agent-bench/instances; a
    ConfigError in one line when that path or one above it is not a folder."""
    folder = Path(os.environ.get(STATE_DIR_VARIABLE) or Path.home() / ".cache" / "agent-bench" / "instances")
    blocking = next((path for path in [folder, *folder.parents] if path.exists() and not path.is_dir()), None)
    if blocking is not None:
        raise ConfigError(
            f"the bench's state folder {folder} cannot be made: {blocking} is not a folder; remove it, or set "
            f"{STATE_DIR_VARIABLE} to a folder"
        )
    return folder


class BenchInstance:
    """One bench's instance: `start` removes what dead benches left and writes our state file; `close` removes
    what we started and the state file."""

    def __init__(self, ownership: Ownership, docker: Any = None) -> None:
        self.ownership = ownership
        self.names = BenchNames(ownership.instance)
        self.docker = docker
        self.tmp = Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}{ownership.instance}"

    def start(self, out: Path) -> list[str]:
        """Reap dead instances (returns one line for each), then record ourselves and make our temp folder."""
        folder = state_dir()
        lines = reap_dead(folder, self.docker)
        self.ownership.state_file = folder / f"{self.ownership.instance}.json"
        self.ownership.out = str(out)
        self.ownership.docker = self.docker is not None
        self.tmp.mkdir(mode=0o700)
        self.ownership.add_folder(self.tmp)  # saves the state file
        return lines

    @contextlib.contextmanager
    def temp_files(self) -> Iterator[None]:
        """While it runs, every temp file and folder of this process goes into our temp folder (tempfile's
        default), so that whatever a kill leaves there is the next bench's to remove."""
        before, tempfile.tempdir = tempfile.tempdir, str(self.tmp)
        try:
            yield
        finally:
            tempfile.tempdir = before

    def close(self) -> None:
        remove_instance(self.ownership, self.docker)


def reap_dead(folder: Path, client: Any = None) -> list[str]:
    """Remove what each dead instance recorded in `folder` left behind; one line per instance."""
    lines = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = Ownership.load(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            lines.append(f"{path} is not a bench state file ({type(e).__name__}: {e}); left as it is")
            continue
        if record.owner_alive():
            continue
        removed = remove_instance(record, client)
        what = ", ".join(removed) if removed else "nothing left"
        lines.append(
            f"bench {record.instance} (pid {record.owner_pid}, started {record.started_at}) ended "
            f"without cleaning up; removed: {what}"
        )
    return lines


def remove_instance(record: Ownership, client: Any = None) -> list[str]:
    """Remove everything `record`'s instance owns (see the module docstring); its state file last, and only when
    all is gone. Returns what was removed."""
    removed = [f"{p.what} (pid {p.pid})" for p in record.processes if record.this_boot() and _end_process(p)]
    names = BenchNames(record.instance)
    kept_state = False
    if record.docker:
        try:
            client = client or docker_client()
        except PrerequisiteError:  # try again at the next start, when the engine may answer
            kept_state = True
        if client is not None:
            removed += remove_labelled(client, f"{OWNER_LABEL}={record.instance}")
            removed += remove_labelled(client, f"{COMPOSE_PROJECT_LABEL}={names.compose_project}")
    if end_isolation(names.firewall_interfaces) | end_allow_within(names.sandbox_interface):
        removed.append("its firewall rule")
    for folder in map(Path, record.folders):
        # Only the instance's own temp folder: a record cannot name any other folder for removal.
        if folder.name == f"{TEMP_PREFIX}{record.instance}" and folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"folder {folder}")
    if record.state_file is not None and not kept_state:
        with contextlib.suppress(FileNotFoundError):
            record.state_file.unlink()
    return removed


def _end_process(process: OwnedProcess, grace_s: float = 10.0) -> bool:
    """Stop a recorded process (and the session it leads) if its pid still names it; True when one was stopped."""
    if not is_running(process.pid, process.start_time):
        return False
    try:
        leads_group = os.getpgid(process.pid) == process.pid
    except ProcessLookupError:
        return False
    stop = kill_group if leads_group else _kill
    terminate(lambda sig: stop(process.pid, sig), lambda: is_running(process.pid, process.start_time), grace_s)
    return True


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
