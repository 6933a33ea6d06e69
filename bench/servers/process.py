"""One llama-server running as a host process: start on a free port, wait until healthy, stop.

Used by the embedded servers and by the tests that need a real server.
"""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bench.errors import ServerStartError
from bench.processes import kill_group
from bench.servers.api import check_ctx, wait_healthy
from bench.servers.binaries import find_llama_server, llama_env

# Flags every benchmark server gets (docs/internals.md, notes on llama-server): one slot, so the slot owns the
# whole window and one prompt cache; no host-RAM prompt cache, so cache hits come only from the live slot;
# /metrics on, so reprocessed tokens can be cross-checked; no context shift (the default), so a full window cuts.
BENCH_FLAGS = ["-np", "1", "--cache-ram", "0", "--metrics", "--no-webui"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LlamaProcess:
    """A llama-server process serving `model` with a `ctx`-token window on host:port."""

    def __init__(
        self,
        model: Path,
        ctx: int,
        log_path: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        extra_args: Sequence[str] = (),
        threads: int | None = None,
    ) -> None:
        self.model = model
        self.ctx = ctx
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.threads = threads
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        server = find_llama_server()
        cmd = [str(server), "-m", str(self.model), "-c", str(self.ctx), "--host", self.host, "--port", str(self.port)]
        slots = self.log_path.parent / "slots"  # lets the bench empty the prompt cache between runs
        slots.mkdir(parents=True, exist_ok=True)
        cmd += ["--slot-save-path", str(slots)]
        if self.threads:
            cmd += ["-t", str(self.threads)]
        return cmd + BENCH_FLAGS + self.extra_args

    def start(self, timeout_s: float = 120.0) -> None:
        cmd = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=llama_env(Path(cmd[0])), start_new_session=True
            )
        if not wait_healthy([self.url], timeout_s, self._exited_early):
            self.stop()
            raise ServerStartError(
                f"llama-server at {self.url} was not healthy after {timeout_s:.0f}s; log tail:\n{self.log_tail()}"
            )
        try:
            check_ctx(self.url, self.ctx, "llama-server")
        except ServerStartError:
            self.stop()
            raise

    def _exited_early(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            status, tail = self.proc.returncode, self.log_tail()
            raise ServerStartError(f"llama-server exited with status {status} while starting; log:\n{tail}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        kill_group(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            self.proc.wait()

    def __enter__(self) -> LlamaProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
