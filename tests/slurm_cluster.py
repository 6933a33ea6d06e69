"""A real single-node Slurm cluster of a test's own: munged, slurmctld and slurmd from Debian's slurm-wlm and munge,
everything (key, sockets, ports, state, logs) in one folder, so it stands beside any other Slurm on the host and
leaves nothing behind. Stopped by the pids it recorded, never by name.

    with SlurmCluster(tmp_path / "slurm") as cluster:
        subprocess.run(["sbatch", ...], env=cluster.env)

Runs as root (SlurmUser=root, no cgroups: proctrack/linuxproc, task/none), as on CI.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    absent = [p for p in PROGRAMS if shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None]
    if absent:
        return f"{', '.join(absent)} not found: apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "a test Slurm cluster runs its daemons as root (SlurmUser=root): run the tests as root"
    return None


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def program(name: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    assert found, name
    return found


class SlurmCluster:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.node = socket.gethostname().split(".")[0]
        self.conf = folder / "slurm.conf"
        self.munge_socket = folder / "munge" / "socket"
        self.pid_files = [folder / "slurmd.pid", folder / "slurmctld.pid", folder / "munge" / "munged.pid"]

    @property
    def env(self) -> dict[str, str]:
        return os.environ | {"SLURM_CONF": str(self.conf)}

    def start(self, timeout_s: float = 30.0) -> SlurmCluster:
        for sub in ("state", "spool", "log", "munge"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        (self.folder / "munge").chmod(0o755)
        key = self.folder / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        munge = self.folder / "munge"
        files = [f"--key-file={key}", f"--log-file={munge / 'munged.log'}", f"--pid-file={munge / 'munged.pid'}"]
        files.append(f"--seed-file={munge / 'seed'}")
        subprocess.run([program("munged"), "--force", f"--socket={self.munge_socket}", *files], check=True, timeout=30)
        self.conf.write_text(self.config())
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([program(daemon), "-f", str(self.conf)], env=self.env, check=True, timeout=30)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
            if state.stdout.strip() == "idle":
                return self
            time.sleep(0.5)
        raise RuntimeError(f"the test Slurm node never became idle; logs in {self.folder / 'log'}")

    def config(self) -> str:
        ctld, slurmd = free_ports(2)
        d = self.folder
        lines = {
            "ClusterName": "benchtest",
            "SlurmctldHost": self.node,
            "SlurmctldPort": ctld,
            "SlurmdPort": slurmd,
            "AuthType": "auth/munge",
            "AuthInfo": f"socket={self.munge_socket}",
            "CredType": "cred/munge",
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "StateSaveLocation": d / "state",
            "SlurmdSpoolDir": d / "spool",
            "SlurmctldPidFile": d / "slurmctld.pid",
            "SlurmdPidFile": d / "slurmd.pid",
            "SlurmctldLogFile": d / "log" / "slurmctld.log",
            "SlurmdLogFile": d / "log" / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "ReturnToService": 2,
            "MpiDefault": "none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            # Batch jobs are scheduled without slurmctld's default delay of up to 3 s per pass (an array task, the
            # next one, the merge job each waited 1.3 to 2.7 s for it); a cluster of a test's own has no throughput
            # to protect.
            "SchedulerParameters": "batch_sched_delay=0",
        }
        text = "".join(f"{key}={value}\n" for key, value in lines.items())
        text += f"NodeName={self.node} CPUs={os.cpu_count()} State=UNKNOWN\n"
        return text + f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n"

    def wait(self, jobs: list[str], timeout_s: float) -> None:
        """Until none of `jobs` is queued or running (the jobs of an array included)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            queue = subprocess.run(
                ["squeue", "-h", "-j", ",".join(jobs), "-o", "%i"], env=self.env, capture_output=True, text=True
            )
            if queue.returncode == 0 and not queue.stdout.strip():
                return
            time.sleep(0.5)
        raise TimeoutError(f"Slurm jobs {jobs} still queued after {timeout_s:.0f} s")

    def stop(self) -> None:
        """Both Slurm daemons at once, then munged, which they authenticate with: by the pids they wrote."""
        self._terminate(self.pid_files[:2])
        self._terminate(self.pid_files[2:])

    @staticmethod
    def _terminate(pid_files: list[Path]) -> None:
        pids = []
        for pid_file in pid_files:
            try:
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, IndexError):  # not started, or gone already
                continue
            pids.append(pid)
        deadline = time.monotonic() + 30
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if _alive(pid)]
            time.sleep(0.05)

    def __enter__(self) -> SlurmCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
