"""`make bench` on a Docker host that cannot pull: what making the local base image needs (debootstrap, run as root)
is checked before any long build (.ci/base-image.sh --prerequisites, called by bench.containers.local_base).

The engine is a stand-in on a socket of the test's own: it answers, has no image and cannot pull, as the engine of
such a host does (this machine's real engine has the local image already, so it never asks for debootstrap). The
rest is real: make, the Makefile, local_base's decision, the script; a user without root is stood in for by an `id`
on PATH, and PATH lacks debootstrap.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "base-image.sh"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # debootstrap lives in /usr/sbin
ONE_LINE_START = "base image: making agentbench/base:bookworm needs debootstrap"


class NoImagesNoRegistry(http.server.BaseHTTPRequestHandler):
    """The Docker API of an engine with no image that cannot reach a registry."""

    protocol_version = "HTTP/1.1"

    def answer(self, status: int, body: object) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/_ping"):
            self.answer(200, "OK")
        elif self.path.endswith("/version"):
            self.answer(200, {"ApiVersion": "1.45", "MinAPIVersion": "1.24", "Version": "stand-in"})
        else:  # /images/NAME/json and anything else: not here
            self.answer(404, {"message": f"No such image: {self.path}"})

    def do_POST(self) -> None:  # /images/create: a pull
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer(500, {"message": "no registry answers (the stand-in engine cannot pull)"})

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self) -> tuple[object, tuple[str, int]]:
        request, _ = super().get_request()
        return request, ("local", 0)  # BaseHTTPRequestHandler wants a (host, port) client address


@pytest.fixture
def engine_cannot_pull(tmp_path: Path) -> Iterator[str]:
    socket = tmp_path / "docker.sock"
    server = UnixServer(str(socket), NoImagesNoRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"unix://{socket}"
    server.shutdown()
    server.server_close()


def bin_dir(tmp_path: Path, tools: dict[str, str]) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, text in tools.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


NOT_ROOT = '#!/bin/sh\n[ "$1" = -u ] && echo 1000 && exit 0\nexec /usr/bin/id "$@"\n'


def user_env(path: str, **extra: str) -> dict[str, str]:
    # A user's shell has no make of its own around it: under `make test` MAKELEVEL would make the make here say
    # `make[1]: ***`, a line a user never sees.
    outer = ("AGENTBENCH_BASE_IMAGE", "DOCKER_HOST", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    keep = {k: v for k, v in os.environ.items() if k not in outer}
    return keep | {"PATH": path} | extra


def test_without_debootstrap_or_root_make_bench_stops_in_one_line_before_any_build(
    tmp_path: Path, engine_cannot_pull: str
) -> None:
    path = f"{bin_dir(tmp_path, {'id': NOT_ROOT})}:{SYSTEM_PATH}"
    assert shutil.which("debootstrap", path=path) is None
    env = user_env(path, DOCKER_HOST=engine_cannot_pull)
    done = subprocess.run(["make", "bench", "CTX=4096"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert len(ours) == 1 and ours[0].startswith(ONE_LINE_START), done.stderr
    assert "sudo apt-get install debootstrap" in ours[0]
    assert "AGENTBENCH_BASE_IMAGE" in ours[0] and "SANDBOX=local" in ours[0]
    assert "base-prerequisites" in done.stderr  # make names the step that stopped it
    commands = done.stdout
    assert "local_base --prerequisites" in commands
    for later in ("pip wheel", "check_llama.py", "-m bench run"):  # setup's build, its check, the bench itself
        assert later not in commands, later


def test_the_local_sandbox_with_host_servers_needs_no_base_image_so_no_debootstrap(
    tmp_path: Path, engine_cannot_pull: str
) -> None:
    env = user_env(f"{bin_dir(tmp_path, {'id': NOT_ROOT})}:{SYSTEM_PATH}", DOCKER_HOST=engine_cannot_pull)
    plan = subprocess.run(
        ["make", "-n", "bench", "SANDBOX=local"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert plan.returncode == 0, plan.stderr
    assert "local_base" not in plan.stdout and "-m bench run" in plan.stdout
    compose = subprocess.run(
        ["make", "-n", "bench", "SANDBOX=local", "SERVERS=compose"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "local_base --prerequisites" in compose.stdout  # compose's CPU image is built on the base


def prerequisites(path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT), "--prerequisites", "agentbench/base:bookworm"],
        env=user_env(path),
        capture_output=True,
        text=True,
        timeout=60,
    )


ROOT_ID = '#!/bin/sh\n[ "$1" = -u ] && echo 0 && exit 0\nexec /usr/bin/id "$@"\n'


def test_as_root_with_apt_it_installs_debootstrap(tmp_path: Path) -> None:
    """apt-get stands in (it records its calls and puts a debootstrap on PATH), so the test installs nothing."""
    folder = tmp_path / "bin"
    calls = tmp_path / "apt-calls"
    installs = f'printf "#!/bin/sh\\n" >{folder}/debootstrap && chmod +x {folder}/debootstrap'
    bin_dir(
        tmp_path,
        {"id": ROOT_ID, "apt-get": f'#!/bin/sh\necho "$@" >>{calls}\n[ "$1" = install ] && {installs}\nexit 0\n'},
    )
    done = prerequisites(f"{folder}:{SYSTEM_PATH}")
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["update -q", "install -y -q debootstrap"]
    assert done.stderr == "base image: installing debootstrap (apt-get), which making agentbench/base:bookworm needs\n"


def test_as_root_without_apt_or_when_apt_fails_it_stops_in_one_line(tmp_path: Path) -> None:
    folder = bin_dir(tmp_path, {"id": ROOT_ID})
    no_apt = prerequisites(str(folder))  # nothing else on PATH: no apt-get
    (line,) = no_apt.stderr.splitlines()
    assert no_apt.returncode == 1 and "no apt-get here: install debootstrap" in line and "SANDBOX=local" in line
    bin_dir(tmp_path, {"apt-get": "#!/bin/sh\necho 'E: Unable to locate package debootstrap' >&2\nexit 100\n"})
    failed = prerequisites(f"{folder}:{SYSTEM_PATH}")
    assert failed.returncode == 1 and failed.stderr.splitlines()[-1].startswith(
        "base image: apt-get install debootstrap failed (above)"
    )
    assert "E: Unable to locate package debootstrap" in failed.stderr


def test_as_root_with_debootstrap_there_is_nothing_to_do(tmp_path: Path) -> None:
    folder = bin_dir(tmp_path, {"id": ROOT_ID, "debootstrap": "#!/bin/sh\n", "apt-get": "#!/bin/sh\nexit 9\n"})
    done = prerequisites(f"{folder}:{SYSTEM_PATH}")
    assert (done.returncode, done.stderr) == (0, "")
