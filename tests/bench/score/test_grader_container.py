"""The docker grader is as locked as the agent's sandbox: a probe test run by the grader, inside the grader,
asserts each limit as the agent's code would meet it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.priority import lower_this_thread, lowered_by
from bench.score.graders import DockerGrader, GraderLimits, PytestRun, run_pytest
from bench.score.sessions import GRADING_DIR, WITNESS_MODULE, plugin_files

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PROBE = """
import os
import stat
from pathlib import Path

MIB = 1024 * 1024


def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()


def cgroup(v2_file, v1_file):
    for name in (v2_file, v1_file):
        if name and (Path("/sys/fs/cgroup") / name).exists():
            return (Path("/sys/fs/cgroup") / name).read_text().split()
    raise AssertionError(f"no cgroup file {v2_file} or {v1_file}")


def test_no_new_privileges():
    assert status("NoNewPrivs") == "1"


def test_no_capabilities():
    assert int(status("CapEff"), 16) == 0 and int(status("CapPrm"), 16) == 0 and int(status("CapBnd"), 16) == 0


def test_not_root():
    assert os.getuid() != 0 and os.geteuid() != 0 and os.getgid() != 0


def test_root_file_system_is_read_only():
    assert os.statvfs("/").f_flag & os.ST_RDONLY
    assert os.statvfs("/src").f_flag & os.ST_RDONLY  # the prepared copy, as handed in


def test_no_setuid_or_setgid_program():
    found = []
    for folder, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if not (folder == "/" and d in ("proc", "sys", "dev"))]
        for name in files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(path)
    assert found == []


def test_no_network_but_loopback():
    assert sorted(os.listdir("/sys/class/net")) == ["lo"]


def test_work_dir_and_tmp_are_small_writable_tmpfs():
    for folder, limit_mib in ((os.getcwd(), WORK_MIB), ("/tmp", TMP_MIB)):
        info = os.statvfs(folder)
        assert not info.f_flag & os.ST_RDONLY
        assert info.f_blocks * info.f_frsize <= limit_mib * MIB
    assert os.path.dirname(os.getcwd()) == "/grade"  # a session's own copy


def test_a_child_of_the_tests_cannot_reach_pytest_or_the_supervisor():
    # Both are non-dumpable: their descriptors (the witness's pipe), memory and environment are closed to a child
    # of the same user; and the sessions' spec, hidden tests included, is in no environment a child inherits.
    import subprocess
    import sys

    probe = (
        "import os, sys\\n"
        "for pid in (os.getppid(), 1):\\n"
        "    for what in ('fd', 'environ', 'mem'):\\n"
        "        try:\\n"
        "            os.listdir(f'/proc/{pid}/fd') if what == 'fd' else open(f'/proc/{pid}/{what}', 'rb').read(1)\\n"
        "        except PermissionError:\\n"
        "            continue\\n"
        "        sys.exit(f'/proc/{pid}/{what} is readable')\\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not any(name.startswith(("BENCH_GRADING_SPEC", "BENCH_WITNESS")) for name in os.environ)


def test_memory_cpu_and_process_limits():
    assert int(cgroup("memory.max", "memory/memory.limit_in_bytes")[0]) <= MEMORY_MIB * MIB
    assert int(cgroup("pids.max", "pids/pids.max")[0]) <= PIDS
    if Path("/sys/fs/cgroup/cpu.max").exists():
        quota, period = cgroup("cpu.max", "")
    else:
        quota, period = cgroup("", "cpu/cpu.cfs_quota_us")[0], cgroup("", "cpu/cpu.cfs_period_us")[0]
    assert quota != "max" and int(quota) / int(period) <= CPUS
"""


WEIGHT_PROBE = """
from pathlib import Path


def test_the_cpu_weight_is_the_lowered_threads():
    v2, v1 = Path("/sys/fs/cgroup/cpu.weight"), Path("/sys/fs/cgroup/cpu/cpu.shares")
    if v2.exists():
        assert int(v2.read_text()) < 100  # the default weight, which shares of 1024 become
    else:
        assert int(v1.read_text()) == SHARES
"""


def probe_run(tmp_path: Path, probe: str, limits: GraderLimits | None = None) -> PytestRun:
    """`probe` (a test module) run by the docker grader with the bench's plugins, as hidden tests are."""
    from bench.containers.engine import docker_client
    from bench.containers.images import ensure_sandbox_image

    client: Any = docker_client()
    (tmp_path / "test_probe.py").write_text(probe)
    for rel, text in plugin_files().items():  # the witness among them: it makes pytest non-dumpable
        (tmp_path / GRADING_DIR / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / GRADING_DIR / rel).write_text(text)
    grader = DockerGrader(client, ensure_sandbox_image(client, ROOT), limits)
    args = ["-q", "-p", "no:cacheprovider", "-p", WITNESS_MODULE, "test_probe.py"]
    return run_pytest(grader, tmp_path, args, timeout_s=180, plugins=GRADING_DIR)


def test_the_grader_container_is_locked_down(tmp_path: Path) -> None:
    limits = GraderLimits(memory="1g", cpus=1.0, pids=128, work_dir_size="64m", tmp_size="32m")
    constants = f"WORK_MIB, TMP_MIB, MEMORY_MIB, PIDS, CPUS = 64, 32, 1024, {limits.pids}, {limits.cpus}\n"
    run = probe_run(tmp_path, constants + PROBE, limits)

    assert (run.exit_code, run.timed_out) == (0, False), run.output[-3000:]
    assert "9 passed" in run.output


def test_a_grader_started_beside_a_measured_run_yields_the_cpu(tmp_path: Path) -> None:
    """Grading beside the next run lowers its thread (bench/run/gradings.py); the container it starts weighs for the
    scheduler what its processes weigh (110 against 1024 at nice 10, 137 at 9 under a `nice` of 10), as the local
    grader's pytest would."""
    runs: list[PytestRun] = []

    def grade_lowered() -> None:
        lower_this_thread()
        shares = {10: "110", 9: "137"}[lowered_by()]
        runs.append(probe_run(tmp_path, WEIGHT_PROBE.replace("SHARES", shares)))

    thread = threading.Thread(target=grade_lowered)
    thread.start()
    thread.join()

    assert (runs[0].exit_code, runs[0].timed_out) == (0, False), runs[0].output[-3000:]
    assert "1 passed" in runs[0].output
