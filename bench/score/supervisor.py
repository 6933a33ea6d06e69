"""The grading supervisor: the parent of every grading pytest, where the tests' code cannot reach.

The graders start it as `python -I -B -c SOURCE` with the spec in its environment (BENCH_GRADING_SPEC_0, _1, ...:
zlib-compressed JSON in base64), where no other process can read it once this one is non-dumpable; in the grading
container it is PID 1. For each session of the spec it makes a fresh copy of the prepared folder; a judged session
(the hidden tests) gets folders of its own beside that copy (LAYOUT): the tests, written only now, and the bench's
plugins, which pytest imports from before it starts and never after, the reports and a temporary folder. It starts
pytest in the copy with its output on a pipe of ours and hands pytest's witness (bench/score/witness_plugin.py) a
pipe to report on, among decoy pipes that look the same: a write on a decoy is tampering. No process the tests start
can open that channel: the pipe is passed to pytest alone (not inheritable), and this process and pytest make
themselves non-dumpable, so no other process of the same user may open their descriptors through /proc/PID/fd,
read their memory or environment, or trace them.

When a session ends (or times out) every process it left is killed (in the container: every process but this one),
then its junit XML is read, without following links, up to a size limit. The report, one JSON document, is printed
after a marker line: {"runs": [{"exit_code", "timed_out", "output", "witness", "witness_problem", "junit"}]}.
Nothing the tests print reaches this process's stdout: their output is a field of the report. Standard library
only: it runs in the sandbox image's python3, which holds nothing of the bench.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib
from typing import Any

PR_SET_DUMPABLE = 4
JUNIT_LIMIT = 8 * 1024 * 1024  # bytes of junit XML read back; a report this large is not one pytest wrote for us
WITNESS_LIMIT = 8 * 1024 * 1024  # bytes of witness lines; more is not a witness of ours
OUTPUT_LIMIT = 1024 * 1024  # bytes kept of pytest's output: its first and last halves
DRAIN_S = 0.3  # after pytest exits, how long what is still in the pipes is read
WITNESS_FD_VARIABLE = "BENCH_WITNESS_FD"
DECOY_FDS_VARIABLE = "BENCH_DECOY_FDS"
HIDE_VARIABLE = "BENCH_WITNESS_HIDE"
SEAL_VARIABLE = "BENCH_WITNESS_SEAL"
STANDIN_VARIABLE = "BENCH_STANDIN"
SPEC_VARIABLE = "BENCH_GRADING_SPEC"
# A judged session's folders: the repository copy (the tests' current folder, where programs and the code under test
# may write), the tests and the bench's plugins (which nothing the tests run may write), the reports, a temporary one.
LAYOUT = {
    "repository": "repo",
    "tests": "judge/tests",
    "plugins": "judge/plugins",
    "reports": "reports",
    "temporary": "tmp",
}

# pytest as `python -m pytest`, with no empty or relative entry on sys.path (the current folder is a repository
# copy). A plain session (a solution's own tests): the plugin folder first, the repository last (after the standard
# library and pytest, so it shadows neither). A judged one: the plugin folder only until the witness and (library-
# style) the stand-ins of the repository's modules are imported; the repository on no path at all, except in an open
# session (plain pytest's verdict on library-style tests: the code in the tests' process), where it comes last, after
# the tests' folder (a visible test is in both: the tests' copy is the one collected).
BOOT = (
    "import os, sys\n"
    "plugins, style = sys.argv.pop(1), sys.argv.pop(1)\n"
    "sys.path[:] = [p for p in sys.path if p and os.path.isabs(p)]\n"
    "if plugins:\n"
    "    sys.path.insert(0, os.path.abspath(plugins))\n"
    "plugins_now = []\n"
    "if style == 'plain':\n"
    "    sys.path.append(os.getcwd())\n"
    "else:\n"
    "    import bench_grading.witness\n"
    "    plugins_now.append(bench_grading.witness)\n"
    "    if style == 'library':\n"
    "        import bench_grading.standin\n"
    "        bench_grading.standin.install()\n"
    "    sys.path.remove(plugins)\n"
    "    if style == 'open':\n"
    "        sys.path.append(os.path.join(os.path.dirname(plugins), 'tests'))\n"
    "        sys.path.append(os.getcwd())\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:], plugins=plugins_now))\n"
)


def make_undumpable() -> bool:
    """PR_SET_DUMPABLE 0: other processes of this user can no longer open /proc/PID/fd, mem or environ of ours."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Kept:
    """Bytes kept up to a limit: the first and the last half, and how many were cut between them."""

    def __init__(self, limit: int) -> None:
        self.limit, self.head, self.tail, self.total = limit, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        del self.tail[: max(0, len(self.tail) - (self.limit - self.limit // 2))]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n[bench: {cut} bytes of output cut here]\n" if cut else ""
        return self.head.decode(errors="replace") + middle + self.tail.decode(errors="replace")


def read_report(root: str, rel: str) -> str | None:
    """The junit XML at root/rel, when it is a regular file of one link and at most JUNIT_LIMIT bytes; a link on
    the way, a FIFO or a device is not read."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.split("/")[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        report = os.open(rel.split("/")[-1], flags, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        info = os.fstat(report)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > JUNIT_LIMIT:
            return None
        data = os.read(report, JUNIT_LIMIT + 1)
    finally:
        os.close(report)
    return data.decode(errors="replace") if len(data) <= JUNIT_LIMIT else None


def unread_because(path: str, code: int) -> str:
    """Why no junit XML was read at `path` after pytest exited with status `code`."""
    killed = f"pytest was killed by signal {-code}; " if code < 0 else ""
    try:
        info = os.lstat(path)
    except OSError:
        return f"{killed}there is none"
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        return f"{killed}its path is not a file of its own"
    return f"{killed}it is over {JUNIT_LIMIT} bytes" if info.st_size > JUNIT_LIMIT else f"{killed}it could not be read"


def kill_left_over(pgid: int, kill_all: bool) -> None:
    """Kill what a session left: its process group, and (as PID 1 of the container) every other process."""
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    if kill_all:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)


def prepare(run: dict[str, Any], folder: str, source: str) -> tuple[list[str], str, dict[str, str], str]:
    """The session's folders made: its pytest arguments, current folder, environment additions and junit XML path."""
    if run.get("style", "plain") == "plain":
        fresh_copy(source, folder, run.get("files") or {})
        junit = os.path.join(folder, run["junit"]) if run.get("junit") else ""
        return [run.get("plugins", ""), "plain", *run["args"]], folder, {}, junit
    at = {key: os.path.join(folder, rel) for key, rel in LAYOUT.items()}
    fresh_copy(source, at["repository"], run.get("files") or {})
    write_files(at["tests"], run.get("tests") or {})
    write_files(at["plugins"], run.get("plugins") or {})
    os.makedirs(at["reports"])
    os.makedirs(at["temporary"])
    writable = [at["repository"], at["temporary"], at["reports"], "/dev"]
    keep = [at["repository"]] if run.get("style") == "open" else []  # the code's own folder, as plain pytest has it
    seal = {"session": folder, "writable": writable, "keep": keep}
    extra = {SEAL_VARIABLE: json.dumps(seal), "TMPDIR": at["temporary"]}
    if run.get("hide"):
        extra[HIDE_VARIABLE] = at["tests"]
    if run.get("style") == "library":
        extra[STANDIN_VARIABLE] = json.dumps({key: at[key] for key in ("repository", "tests", "temporary")})
    junit = os.path.join(at["reports"], "junit.xml")
    args = [at["plugins"], run["style"], "-c", f"{at['plugins']}/pytest.ini", f"--rootdir={at['tests']}"]
    args += [f"--junitxml={junit}", f"--basetemp={at['temporary']}/pytest", *run["args"]]
    return [*args, *(os.path.join(at["tests"], test) for test in run["run"])], at["repository"], extra, junit


def run_session(run: dict[str, Any], folder: str, deadline: float, spec: dict[str, Any]) -> dict[str, Any]:
    """One pytest session in `folder`, to its end or the deadline; its report."""
    args, cwd, extra, junit_at = prepare(run, folder, spec["source"])
    (witness_r, witness_w), decoys = os.pipe(), [os.pipe() for _ in range(int(spec.get("decoys", 4)))]
    writers = [witness_w, *(w for _, w in decoys)]
    env = {**os.environ, **extra}
    env[WITNESS_FD_VARIABLE] = str(witness_w)
    env[DECOY_FDS_VARIABLE] = ",".join(str(w) for _, w in decoys)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", BOOT, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=writers,
        start_new_session=True,
    )
    for fd in writers:
        os.close(fd)
    output, witness, decoy_bytes, timed_out = _collect(
        proc=proc, witness_r=witness_r, decoys=[r for r, _ in decoys], deadline=deadline, spec=spec
    )
    code = proc.wait()
    kill_left_over(proc.pid, spec.get("kill_all", False))
    problem = None
    if len(witness) > WITNESS_LIMIT:
        problem = f"the witness channel carried more than {WITNESS_LIMIT} bytes"
    elif decoy_bytes:
        problem = f"{decoy_bytes} bytes arrived on the witness's decoy channels, which only a forger writes to"
    junit = read_report(*os.path.split(junit_at)) if junit_at and not timed_out else None
    unread = unread_because(junit_at, code) if junit_at and junit is None and not timed_out else None
    return {
        "unread": unread,
        "exit_code": None if timed_out else code,
        "timed_out": timed_out,
        "output": output.text(),
        "witness": witness.decode(errors="replace"),
        "witness_problem": problem,
        "junit": junit,
    }


def _collect(
    proc: subprocess.Popen[bytes], witness_r: int, decoys: list[int], deadline: float, spec: dict[str, Any]
) -> tuple[Kept, bytearray, int, bool]:
    """pytest's output, the witness's bytes and how many arrived on decoys, read until every pipe closes (or a while
    after pytest ends), killing the session at the deadline; whether it timed out. Closes the read ends."""
    assert proc.stdout is not None
    output, witness, decoy_bytes = Kept(OUTPUT_LIMIT), bytearray(), 0
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout.fileno(), selectors.EVENT_READ, "output")
    selector.register(witness_r, selectors.EVENT_READ, "witness")
    for read_end in decoys:
        selector.register(read_end, selectors.EVENT_READ, "decoy")
    timed_out, ended_at = False, None
    while selector.get_map():
        now = time.monotonic()
        if ended_at is None and proc.poll() is not None:
            ended_at = now
        if ended_at is not None and now - ended_at > DRAIN_S:
            break
        if ended_at is None and now > deadline:
            timed_out = True
            kill_left_over(proc.pid, spec.get("kill_all", False))
            proc.wait()
            ended_at = now
        for key, _ in selector.select(timeout=0.1):
            data = os.read(key.fd, 65536)
            if not data:
                selector.unregister(key.fd)
            elif key.data == "output":
                output.add(data)
            elif key.data == "witness":
                witness += data[: max(0, WITNESS_LIMIT + 1 - len(witness))]
            else:
                decoy_bytes += len(data)
    selector.close()
    for fd in [witness_r, *decoys]:
        os.close(fd)
    proc.stdout.close()
    return output, witness, decoy_bytes, timed_out


def _remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def fresh_copy(source: str, folder: str, files: dict[str, str]) -> None:
    """A copy of the prepared folder for one session (links copied as links, .git left out), with `files` written
    over whatever the copy holds at their paths (a file, a folder, a link; a link on the way is replaced too)."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder, symlinks=True, ignore=lambda at, names: [".git"] if at == source else [])
    write_files(folder, files)


def write_files(folder: str, files: dict[str, str]) -> None:
    os.makedirs(folder, exist_ok=True)
    for rel, text in files.items():
        at = folder
        for part in rel.split("/")[:-1]:
            at = os.path.join(at, part)
            if os.path.islink(at) or (os.path.exists(at) and not os.path.isdir(at)):
                _remove(at)
            os.makedirs(at, exist_ok=True)
        _remove(os.path.join(folder, rel))
        with open(os.path.join(folder, rel), "w", encoding="utf-8") as f:
            f.write(text)


def take_spec() -> dict[str, Any]:
    """The spec from the environment, which it then leaves: pytest and the tests' children never see it."""
    chunks: list[str] = []
    while f"{SPEC_VARIABLE}_{len(chunks)}" in os.environ:
        chunks.append(os.environ.pop(f"{SPEC_VARIABLE}_{len(chunks)}"))
    spec: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode("".join(chunks))))
    return spec


def main() -> int:
    make_undumpable()
    spec = take_spec()
    deadline = time.monotonic() + float(spec["timeout_s"])
    reports = []
    for index, run in enumerate(spec["runs"]):
        folder = os.path.join(spec["scratch"], f"session-{index}-{secrets.token_hex(4)}")
        try:
            reports.append(run_session(run, folder, deadline, spec))
        except OSError as e:
            reports.append({"exit_code": None, "timed_out": False, "output": f"the session failed: {e}", "junit": None})
        if spec.get("keep") is not True:
            shutil.rmtree(folder, ignore_errors=True)
    sys.stdout.write(f"\n{spec['marker']}\n{json.dumps({'runs': reports})}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
