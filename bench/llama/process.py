"""One llama-server running as a host process: start on a free port, wait until healthy, stop.

Used by the embedded servers and by the tests that need a real server. The model is a local file (`-m`) or a hub
reference (`-hf`) fetched into the shared cache on first use; the server's stdout is a pseudo-terminal copied into
its log, so that llama.cpp draws its download bar there (bench.llama.download).
"""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from bench.errors import ServerStartError
from bench.llama.api import ServerInfo, check_ctx, wait_healthy
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.download import DownloadWatch
from bench.llama.gpu_pin import GpuPin
from bench.llama.hub import HubRef, cache_dir, hub_environment
from bench.llama.load_errors import load_failure
from bench.llama.server_env import host_server_environment
from bench.ownership import Ownership
from bench.processes import kill_group, terminate

# Flags every benchmark server gets (docs/internals.md, notes on llama-server): one slot, so the slot owns the
# whole window and one prompt cache; no host-RAM prompt cache, so cache hits come only from the live slot;
# /metrics on, so reprocessed tokens can be cross-checked; no context shift (the default), so a full window cuts.
# Plain log lines even though stdout is a terminal (llama.cpp colours its log when either stream is one).
BENCH_FLAGS = ["-np", "1", "--cache-ram", "0", "--metrics", "--no-webui", "--log-colors", "off"]
# Every layer on the GPU, and exactly the requested context (--fit would otherwise shrink it to fit the card).
GPU_FLAGS = ["-ngl", "999", "--fit", "off"]


def model_args(model: Path | HubRef) -> list[str]:
    """llama-server's flags for a local GGUF file or a hub reference it fetches itself."""
    return ["-hf", str(model)] if isinstance(model, HubRef) else ["-m", str(model)]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LlamaProcess:
    """A llama-server process serving `model` (a file, or a hub reference fetched into `cache`) on host:port."""

    def __init__(
        self,
        model: Path | HubRef,
        ctx: int,
        log_path: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        extra_args: Sequence[str] = (),
        threads: int | None = None,
        cache: Path | None = None,
        gpu: bool = False,
        who: str = "llama-server",
        ownership: Ownership | None = None,
        pin: GpuPin | None = None,
        server: Path | None = None,
    ) -> None:
        self.model = model
        self.server = server  # another llama-server binary than the installed one (bench replay --llama-server)
        self.ctx = ctx
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.threads = threads
        self.cache = cache or cache_dir()
        self.gpu = gpu
        self.pin = pin if gpu else None  # the card a GPU server is limited to
        self.who = who
        self.ownership = ownership  # records the process while it runs, so a killed bench's server is found
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: ServerInfo | None = None  # its /props, read once it is healthy
        self._copier: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        server = self.server or find_llama_server()
        cmd = [str(server), *model_args(self.model), "-c", str(self.ctx), "--host", self.host, "--port", str(self.port)]
        slots = self.log_path.parent / "slots"  # lets the bench empty the prompt cache between runs
        slots.mkdir(parents=True, exist_ok=True)
        cmd += ["--slot-save-path", str(slots)]
        if self.threads:
            cmd += ["-t", str(self.threads)]
        return cmd + BENCH_FLAGS + (GPU_FLAGS if self.gpu else []) + self.extra_args

    def start(self, timeout_s: float = 120.0) -> None:
        cmd = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = (
            llama_env(Path(cmd[0]))
            | hub_environment(self.cache)
            | host_server_environment(self.model, self.cache, self.pin)
        )
        terminal, stdout = pty.openpty()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=log, env=env, start_new_session=True
            )
        os.close(stdout)
        if self.ownership is not None:
            self.ownership.process_started(self.proc.pid, self.who, self.port, self.log_path)
        self._copier = threading.Thread(target=_copy_terminal, args=(terminal, self.log_path), daemon=True)
        self._copier.start()
        watch = DownloadWatch(self.who, self._read_log)
        if not wait_healthy([self.url], timeout_s, self._exited_early, watch):
            self.stop()
            raise ServerStartError(
                f"llama-server at {self.url} was not healthy after {timeout_s:.0f}s; log tail:\n{self.log_tail()}"
            )
        try:
            self.info = check_ctx(self.url, self.ctx, self.who)
        except ServerStartError:
            self.stop()
            raise

    def _exited_early(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            status, tail = self.proc.returncode, self.log_tail()
            hint = load_failure(tail)  # a driver that cannot load the build's kernels: what to do
            raise ServerStartError(
                f"llama-server exited with status {status} while starting{'; ' + hint if hint else ''}; log:\n{tail}"
            )

    def _read_log(self, tail_bytes: int = 200_000) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - tail_bytes))
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def log_text(self) -> str:
        """The whole log so far."""
        return self._read_log(tail_bytes=2**40)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        text = self._read_log()
        if not text:
            return "(no log)"
        # A redrawn download bar is one line of many \r-separated states: keep its latest.
        latest = [line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.rstrip("\n").split("\n")]
        return "\n".join(latest[-lines:])

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            proc = self.proc
            terminate(lambda sig: kill_group(proc.pid, sig), lambda: proc.poll() is None, grace_s)
            proc.wait()
            if self._copier is not None:
                self._copier.join(5)
        if self.ownership is not None:
            self.ownership.process_ended(self.proc.pid)

    def __enter__(self) -> LlamaProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _copy_terminal(terminal: int, log_path: Path) -> None:
    """Append what the server writes to its terminal (the download bar) to its log, until the server exits."""
    try:
        with open(log_path, "ab") as log:
            while True:
                try:
                    chunk = os.read(terminal, 65536)
                except OSError:  # EIO: the server closed its end
                    return
                if not chunk:
                    return
                log.write(chunk)
                log.flush()
    finally:
        os.close(terminal)
