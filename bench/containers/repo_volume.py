"""The agent's repository in a size-limited place: a tmpfs Docker volume, filled from the work copy before the run
and read back into it after.

Why a volume and not a host folder: the kernel refuses a write past the tmpfs size (ENOSPC) inside the sandbox, so
the model's commands can fill the repository but not this host's disk; it needs no root on this host (a tmpfs or
loop mount of the bench's own would), and a killed bench leaves only Docker objects carrying its owner label, which
the next bench removes (bench.run.instance). A tmpfs volume lives only while a container mounts it, so a small
holder container (no network, no capability, read-only, `sleep`) keeps it from before the sandbox starts until its
files are read back. Its pages count against the memory of the container that writes them.

One volume and its holder serve a sandbox kind's runs one after another (a bench's worker): starting a holder per
run cost more than the sandbox's own container (perf/sandbox.py). After each run the volume is emptied and checked
to be as new: nothing left in it (files, folders, links, fifos, sockets, and their extended attributes with them),
and /repo itself with its first mode and owner, no extended attribute or ACL (they are removed) and times set anew;
anything else and it is removed, and the next run gets a new one, so no run sees what an earlier one left.
"""

from __future__ import annotations

import contextlib
import json
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


# Run as the volume's owner (the holder's user), in the holder's python3: what the size left (free blocks, block
# size); everything below /repo deleted (a locked folder unlocked first: special files, links and their extended
# attributes go with it); /repo's own extended attributes (an ACL among them) removed, its first mode given back and
# its times set to now; then what /repo is: mode, owner, attributes, times and anything still in it, which must be
# nothing. What a run could leave for the next on /repo itself is exactly these.
EMPTY_SCRIPT = """
import json, os, stat, time
root = "/repo"
info = os.statvfs(root)
def wipe(path):
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            wipe(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)
for name in os.listdir(root):
    try:
        wipe(os.path.join(root, name))
    except (OSError, RecursionError):
        pass
for name in os.listxattr(root):
    try:
        os.removexattr(root, name)
    except OSError:
        pass
os.chmod(root, 0o755)
os.utime(root)
state = os.stat(root)
print(json.dumps({"free": [info.f_bavail, info.f_frsize], "mode": stat.S_IMODE(state.st_mode),
                  "owner": [state.st_uid, state.st_gid], "attributes": os.listxattr(root),
                  "age_s": time.time() - min(state.st_atime, state.st_mtime), "left": os.listdir(root)[:3]}))
"""
FRESH_S = 60  # /repo's times were set to now just before: older ones are a run's


class RepoVolume:
    """A run's repository, one run at a time: `fill` puts the work copy in, `mounts` goes to the sandbox,
    `read_back` brings its files to this host, `empty` readies it for the next run; `remove` when done."""

    def __init__(self, client: Any, image: str, names: BenchNames, size_bytes: int) -> None:
        self.client = client
        self.image = image
        self.names = names
        self.size_bytes = size_bytes
        self.name = ""
        self.volume: Any = None
        self.holder: Any = None
        self.in_use = False  # filled and not yet emptied: a second run at once would share the first one's files

    def fill(self, workdir: Path) -> None:
        """The work copy in the volume, owned by the sandbox's user; the volume and its holder made if none is."""
        import docker.errors

        if self.in_use:
            raise SandboxError("the repository volume is still in use by another run (one sandbox at a time per kind)")
        try:
            if self.holder is None:
                self._create()
            self.in_use = True
            if not self.holder.put_archive("/repo", pack_folder(workdir, SANDBOX_UID, SANDBOX_UID)):
                raise SandboxError("Docker did not take the work copy")
        except docker.errors.DockerException as e:
            self.remove()
            raise SandboxError(f"the repository volume could not be prepared: {str(e)[:300]}") from e

    def _create(self) -> None:
        # The size in pages (nr_blocks, tmpfs's other spelling of size=): podman takes size= in a volume's options
        # for a disk quota, which tmpfs has no use for.
        pages = -(-self.size_bytes // os.sysconf("SC_PAGE_SIZE"))
        options = f"nr_blocks={pages},nr_inodes={REPO_FILES_LIMIT},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755"
        self.name = f"{self.names.prefix}-repo-{secrets.token_hex(3)}"
        self.volume = self.client.volumes.create(
            self.name,
            driver="local",
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": options},
            labels=self.names.labels("repo"),
        )
        self.holder = self.client.containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit="64m",
            pids_limit=8,
            labels=self.names.labels("repo-holder"),
            log_config=LOG_CONFIG,
            volumes={self.name: {"bind": "/repo", "mode": "rw"}},
        )

    @property
    def mounts(self) -> dict[str, dict[str, str]]:
        return {self.name: {"bind": "/repo", "mode": "rw"}}

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

    def empty(self) -> bool:
        """Empty the volume for the next run (or remove it, when it cannot be made as new); returns whether the run
        had filled it up: less than FULL_MARGIN of it was left (False when that is not known: nothing is claimed)."""
        import docker.errors

        if self.holder is None:
            return False
        try:
            code, output = self.holder.exec_run(["python3", "-I", "-S", "-c", EMPTY_SCRIPT])
            state = json.loads(output.decode(errors="replace").strip().splitlines()[-1])
        except (docker.errors.DockerException, ValueError, IndexError):
            code, state = 1, {}
        if code != 0 or not as_new(state):
            self.remove()  # something the run left could not go: the next run gets a new volume
        self.in_use = False
        try:
            free_blocks, block = (int(number) for number in state["free"])
        except (KeyError, TypeError, ValueError):
            return False
        return free_blocks * block < max(FULL_MARGIN, self.size_bytes // 100)

    def remove(self) -> None:
        import docker.errors

        self.in_use = False
        if self.holder is not None:
            remove_container(self.client, self.holder.id)
            self.holder = None
        if self.volume is not None:
            with contextlib.suppress(docker.errors.NotFound):
                self.volume.remove(force=True)
            self.volume = None


def as_new(state: dict[str, Any]) -> bool:
    """Whether the emptied /repo is as the volume's options made it: nothing in it, mode 0755, the sandbox user's,
    no extended attribute (no ACL), and times no run set."""
    age = state.get("age_s")
    return (
        state.get("left") == []
        and state.get("mode") == 0o755
        and state.get("owner") == [SANDBOX_UID, SANDBOX_UID]
        and state.get("attributes") == []
        and isinstance(age, int | float)
        and -FRESH_S < age < FRESH_S
    )
