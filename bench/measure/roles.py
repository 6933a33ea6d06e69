"""Which server a GPU process belongs to: NVML lists host PIDs, and a matcher names the role (flint or jeff).

Host-process servers are matched by PID and their descendants; servers in containers by the container ID that
/proc/<pid>/cgroup names. Either way a PID that cannot be read (gone, another PID namespace) matches no role.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

Role = str
ROLES: tuple[Role, ...] = ("flint", "jeff")
_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
_PARENT_HOPS = 32  # enough for any launcher chain; bounded so a ppid loop in a strange /proc cannot hang us


class ProcessMatcher(Protocol):
    """Says which server (role) a host PID from NVML belongs to, or None."""

    def role_of(self, host_pid: int) -> Role | None: ...


class PidMatcher:
    """Servers running as host processes: the server's own PID, or any process descended from it."""

    def __init__(self, pids: Mapping[Role, int], *, proc_root: Path = Path("/proc")) -> None:
        self._role_by_pid = {pid: role for role, pid in pids.items()}
        self._proc = proc_root

    def role_of(self, host_pid: int) -> Role | None:
        pid: int | None = host_pid
        for _ in range(_PARENT_HOPS):
            if pid is None or pid <= 1:
                return None
            if pid in self._role_by_pid:
                return self._role_by_pid[pid]
            pid = self._parent_of(pid)
        return None

    def _parent_of(self, pid: int) -> int | None:
        try:
            stat = (self._proc / str(pid) / "stat").read_text()
        except OSError:
            return None
        # The command name may contain spaces and ")", so the fields are counted from its last ")".
        fields = stat[stat.rfind(")") + 1 :].split()
        return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


class ContainerMatcher:
    """Servers in containers: NVML gives host PIDs, and /proc/<pid>/cgroup names the container holding one."""

    def __init__(self, containers: Mapping[Role, str], *, proc_root: Path = Path("/proc")) -> None:
        self._containers = {role: cid.lower() for role, cid in containers.items() if cid}
        self._proc = proc_root

    def role_of(self, host_pid: int) -> Role | None:
        try:
            cgroup = (self._proc / str(host_pid) / "cgroup").read_text()
        except OSError:  # not visible from here (another PID namespace) or already gone
            return None
        for full_id in _CONTAINER_ID.findall(cgroup):
            for role, cid in self._containers.items():
                if full_id.startswith(cid):  # short (12-character) IDs are prefixes of the full one
                    return role
        return None
