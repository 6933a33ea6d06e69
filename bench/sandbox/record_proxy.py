"""The recording proxy (docker/record_proxy.py) as a process on this host, in front of Flint for one run of an agent
other than the article's: the agent is given its URL, and its log is that run's trace (bench/measure/proxy_log.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from bench.errors import SandboxError

PROXY_SCRIPT = Path("docker/record_proxy.py")  # in the checkout
PROXY_LOG = "proxy.jsonl"  # in the run's out folder
START_TIMEOUT_S = 30


def proxy_options(max_steps: int | None, timeout_s: float | None = None) -> list[str]:
    """The proxy's flags for a run: its step limit (the proxy refuses the requests with tools past it and writes
    when it did, for the sandbox to end the agent: bench/sandbox/proxy_stop.py), and the longest one answer may take
    (the run's request timeout, as the article agent's own; else the proxy's default)."""
    steps = ["--max-steps", str(max_steps)] if max_steps else []
    return steps + (["--timeout", f"{timeout_s:g}"] if timeout_s else [])


class RecordingProxy:
    """`with RecordingProxy(flint_url, log, checkout=...) as url:` the agent's Flint while the block runs (the script
    of `checkout`, this repository); with `max_steps` and `timeout_s`, it keeps the run's limits (proxy_options)."""

    def __init__(
        self,
        target_url: str,
        log: Path,
        host: str = "127.0.0.1",
        *,
        checkout: Path,
        max_steps: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        parts = urlsplit(target_url)
        self.target = f"{parts.hostname}:{parts.port or 80}"
        self.log, self.host, self.script = log, host, checkout / PROXY_SCRIPT
        self.max_steps, self.timeout_s = max_steps, timeout_s
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        limits = proxy_options(self.max_steps, self.timeout_s)
        command = [sys.executable, str(self.script), "--log", str(self.log), *limits]
        command.append(f"{self.host}:0={self.target}")
        # Its own folder first on sys.path: it imports forward.py and chat_body.py from there.
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "recording HOST:PORT -> TARGET", or why it failed
        found = re.match(r"recording ([\d.]+):(\d+) ", line)
        if not found:
            self.stop()
            raise SandboxError(f"the recording proxy did not start: {line.strip() or 'no output'}")
        return f"http://{found.group(1)}:{found.group(2)}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
