"""What one bench instance started, kept in a small state file, so that the next bench can remove what a killed one
left behind, and only that.

A bench instance has an id (8 hex digits) from which every name it gives Docker is derived (bench.containers.names).
Its state file, `<state dir>/<id>.json`, says who owns it (the bench's pid, that process's start time, the boot and
the host) and lists what cannot be found by name or label: the host processes it started (pid, start time, role,
port, log) and its temp folder. It is rewritten whole (write, then rename) whenever that list changes:

    {"version": 1, "instance": "3fa9c2d1", "host": "build-7", "boot_id": "8c1e...",
     "owner": {"pid": 4242, "start_time": 1873421}, "started_at": "2026-12-01T10:00:00+00:00",
     "out": "/srv/results/night.csv", "docker": true, "folders": ["/tmp/agentbench-3fa9c2d1"],
     "processes": [{"pid": 4250, "start_time": 1873530, "what": "flint", "port": 41234,
                    "log": "/srv/results/runs/servers/3fa9c2d1/flint-4096-1.log"}]}

The owner is alive while a process with its pid and start time runs on its host in the same boot.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.atomic_file import write_atomically
from bench.processes import boot_id, is_running, start_time

STATE_VERSION = 1


@dataclass(frozen=True)
class OwnedProcess:
    pid: int
    start_time: int | None
    what: str  # its role, e.g. "flint"
    port: int | None = None
    log: str | None = None


@dataclass
class Ownership:
    """The record of one bench instance. With `state_file` None it is kept in memory only (tests, one-off servers)."""

    instance: str
    state_file: Path | None = None
    host: str = field(default_factory=socket.gethostname)
    boot_id: str = field(default_factory=boot_id)
    owner_pid: int = field(default_factory=os.getpid)
    owner_start_time: int | None = None
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    out: str = ""
    docker: bool = False  # it may have created Docker objects (labelled with its id)
    folders: list[str] = field(default_factory=list)
    processes: list[OwnedProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.owner_start_time is None and self.owner_pid == os.getpid():
            self.owner_start_time = start_time(self.owner_pid)

    @classmethod
    def new(cls, state_file: Path | None = None) -> Ownership:
        return cls(new_instance_id(), state_file)

    def on_this_host(self) -> bool:
        """Written on this machine (a state folder in a shared home may hold other machines' records)."""
        return self.host == socket.gethostname()

    def this_boot(self) -> bool:
        """Written since this machine last booted: only then do its pids and start times mean anything here."""
        return self.boot_id == boot_id()

    def owner_alive(self) -> bool:
        """Whether the bench that wrote this record may still run: always, for another machine's record."""
        if not self.on_this_host():
            return True
        return self.this_boot() and is_running(self.owner_pid, self.owner_start_time)

    def process_started(self, pid: int, what: str, port: int | None = None, log: Path | None = None) -> None:
        self.processes.append(
            OwnedProcess(pid=pid, start_time=start_time(pid), what=what, port=port, log=str(log) if log else None)
        )
        self.save()

    def process_ended(self, pid: int) -> None:
        self.processes = [p for p in self.processes if p.pid != pid]
        self.save()

    def add_folder(self, folder: Path) -> None:
        self.folders.append(str(folder))
        self.save()

    def uses_docker(self) -> None:
        if not self.docker:
            self.docker = True
            self.save()

    def as_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "instance": self.instance,
            "host": self.host,
            "boot_id": self.boot_id,
            "owner": {"pid": self.owner_pid, "start_time": self.owner_start_time},
            "started_at": self.started_at,
            "out": self.out,
            "docker": self.docker,
            "folders": self.folders,
            "processes": [asdict(p) for p in self.processes],
        }

    def save(self) -> None:
        """Write the state file whole, or not at all (a reader never sees half of it)."""
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(self.state_file, json.dumps(self.as_json(), indent=1).encode())

    @classmethod
    def load(cls, path: Path) -> Ownership:
        """A state file as written by save(); ValueError (or KeyError, TypeError) when it is not one."""
        data = json.loads(path.read_text())
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"{path}: state file version {data.get('version')!r}, expected {STATE_VERSION}")
        owner = data["owner"]
        return cls(
            instance=_instance_id(data["instance"]),
            state_file=path,
            host=str(data["host"]),
            boot_id=str(data["boot_id"]),
            owner_pid=int(owner["pid"]),
            owner_start_time=owner["start_time"],
            started_at=str(data["started_at"]),
            out=str(data["out"]),
            docker=bool(data["docker"]),
            folders=[str(f) for f in data["folders"]],
            processes=[OwnedProcess(**p) for p in data["processes"]],
        )


def new_instance_id() -> str:
    return secrets.token_hex(4)


def _instance_id(text: str) -> str:
    """Ids go into Docker names, interface names and firewall rules: 8 lowercase hex digits and nothing else."""
    if len(text) != 8 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"{text!r} is not a bench instance id")
    return text
