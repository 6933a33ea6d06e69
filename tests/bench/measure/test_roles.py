"""ContainerMatcher across the /proc/<pid>/cgroup formats a server container's host PID shows.

cgroup v1 lists one line per controller hierarchy, cgroup v2 one `0::` line; the cgroupfs driver names the folder
after the container ID, the systemd driver a `docker-<id>.scope` unit. The first case is a real file, read on this
project's build machine (Docker with cgroupfs, v1 controllers plus the unified `0::` line); a real container's
real file is also read in tests/integration/test_hub_fetch.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.measure.roles import ContainerMatcher

CID = "be1f9c15361428a850040388b8a4e84d9ac4cfb0e6953a038158eaafe932961c"
REAL_V1_CGROUPFS = f"""\
9:name=systemd:/docker/{CID}
8:pids:/docker/{CID}
7:blkio:/docker/{CID}
6:freezer:/docker/{CID}
5:devices:/docker/{CID}
4:memory:/docker/{CID}
3:cpuset:/docker/{CID}
2:cpuacct:/docker/{CID}
1:cpu:/docker/{CID}
0::/docker/{CID}
"""


@pytest.mark.parametrize(
    "cgroup",
    [
        REAL_V1_CGROUPFS,
        f"0::/docker/{CID}\n",  # v2, cgroupfs driver
        f"0::/system.slice/docker-{CID}.scope\n",  # v2, systemd driver
        f"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{CID}.scope\n",  # rootless Docker
        f"12:memory:/system.slice/docker-{CID}.scope\n1:name=systemd:/system.slice/docker-{CID}.scope\n",  # v1+systemd
    ],
)
def test_every_cgroup_format_names_the_container(tmp_path: Path, cgroup: str) -> None:
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "cgroup").write_text(cgroup)
    assert ContainerMatcher({"flint": CID[:12]}, proc_root=tmp_path).role_of(4242) == "flint"
    assert ContainerMatcher({"jeff": "0" * 64}, proc_root=tmp_path).role_of(4242) is None


def test_a_host_process_or_a_gone_one_is_no_container(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cgroup").write_text("0::/user.slice/user-1000.slice/session-2.scope\n")
    matcher = ContainerMatcher({"flint": CID}, proc_root=tmp_path)
    assert matcher.role_of(7) is None
    assert matcher.role_of(8) is None  # no such PID (gone, or in another PID namespace)
