"""The agent's repository in a size-limited place: a tmpfs Docker volume, filled from the work copy before the run
and read back into it after.

Why a volume and not a host folder: the kernel refuses a write past the tmpfs size (ENOSPC) inside the sandbox, so
the model's commands can fill the repository but not this host's disk; it needs no root on this host (a tmpfs or
loop mount of the bench's own would), and a killed bench leaves only Docker objects carrying its owner label, which
the next bench removes (bench.run.instance). A tmpfs volume lives only while a container mounts it, so a small
holder container (no network, no capability, read-only, `sleep`) keeps it from before the sandbox starts until its
files are read back. Its pages count against the memory of the container that writes them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from bench.containers.archive import pack_folder, unpack_untrusted
from bench.containers.engine import LOG_CONFIG, SANDBOX_UID, remove_container
from bench.containers.names import BenchNames
from bench.errors import SandboxError

REPO_FILES_LIMIT = 100_000  # files and folders in the repository (the tmpfs's inode limit)
FULL_MARGIN = 1024 * 1024  # bytes left in the repository below which it counts as filled up


class RepoVolume:
    """One run's repository: `mounts` goes to the sandbox, `read_back` brings its files to this host."""

    def __init__(self, client: Any, image: str, names: BenchNames, size_bytes: int) -> None:
        self.client = client
        self.image = image
        self.names = names
        self.size_bytes = size_bytes
        self.name = f"{names.prefix}-repo-{secrets.token_hex(3)}"
        self.volume: Any = None
        self.holder: Any = None

    def create(self, workdir: Path) -> None:
        """The volume, its holder, and the work copy in it, owned by the sandbox's user."""
        import docker.errors

        # The size in pages (nr_blocks, tmpfs's other spelling of size=): podman takes size= in a volume's options
        # for a disk quota, which tmpfs has no use for.
        pages = -(-self.size_bytes // os.sysconf("SC_PAGE_SIZE"))
        options = f"nr_blocks={pages},nr_inodes={REPO_FILES_LIMIT},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755"
        try:
            self.volume = self.client.volumes.create(
                self.name, driver="local", driver_opts={"type": "tmpfs", "device": "tmpfs", "o": options},
                labels=self.names.labels("repo"),
            )  # fmt: skip
            self.holder = self.client.containers.run(
                self.image, ["sleep", "infinity"], detach=True, user=f"{SANDBOX_UID}:{SANDBOX_UID}",
                network_mode="none", read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
                mem_limit="64m", pids_limit=8, labels=self.names.labels("repo-holder"), log_config=LOG_CONFIG,
                volumes={self.name: {"bind": "/repo", "mode": "rw"}},
            )  # fmt: skip
            if not self.holder.put_archive("/repo", pack_folder(workdir, SANDBOX_UID, SANDBOX_UID)):
                raise SandboxError("Docker did not take the work copy")
        except docker.errors.DockerException as e:
            raise SandboxError(f"the repository volume could not be prepared: {str(e)[:300]}") from e

    @property
    def mounts(self) -> dict[str, dict[str, str]]:
        return {self.name: {"bind": "/repo", "mode": "rw"}}

    def full(self) -> bool:
        """Whether the model's commands filled the repository: less than FULL_MARGIN of it is left."""
        import docker.errors

        try:
            code, output = self.holder.exec_run(["stat", "-f", "-c", "%a %S", "/repo"])
            free_blocks, block = (int(word) for word in output.decode().split())
        except (docker.errors.DockerException, ValueError):
            return False  # not known: nothing is claimed
        return code == 0 and free_blocks * block < max(FULL_MARGIN, self.size_bytes // 100)

    def read_back(self, workdir: Path) -> str | None:
        """Replace `workdir` with the repository's files as the run left them; returns why they could not all be
        read (then `workdir` is incomplete and must not be graded), or None."""
        import docker.errors

        shutil.rmtree(workdir)
        workdir.mkdir()
        chunks: Any = None
        try:
            chunks, _ = self.holder.get_archive("/repo/.")
            problem = unpack_untrusted(chunks, workdir, self.size_bytes, REPO_FILES_LIMIT + 1)
        except (docker.errors.DockerException, OSError, ValueError) as e:
            problem = f"{type(e).__name__}: {str(e)[:300]}"
        finally:
            if chunks is not None:
                chunks.close()  # a stream left unread (it stopped short) is not left open
        return None if problem is None else f"the agent's files could not be read back from the sandbox ({problem})"

    def remove(self) -> None:
        import docker.errors

        if self.holder is not None:
            remove_container(self.client, self.holder.id)
            self.holder = None
        if self.volume is not None:
            with contextlib.suppress(docker.errors.NotFound):
                self.volume.remove(force=True)
            self.volume = None
