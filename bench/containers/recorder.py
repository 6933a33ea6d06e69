"""The recording proxy (docker/record_proxy.py) in a container for one run of an agent other than the article's: it
answers as `model` on the sandbox network and passes the model API on to Flint on this host, writing each exchange
to a host folder that only it has mounted (the agent's container cannot reach the log)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.containers.engine import LOG_CONFIG, remove_container
from bench.containers.names import BenchNames
from bench.containers.network import ensure_network, sandbox_network
from bench.errors import SandboxError

RECORDER_PORT = 8090
RECORDER_ALIAS = "model"


class Recorder:
    """`with Recorder(client, image, names, flint, log_dir) as url:` the agent's model URL while the block runs."""

    def __init__(
        self,
        client: Any,
        image: str,
        names: BenchNames,
        flint: tuple[str, int],
        log_dir: Path,
        max_steps: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.client, self.image, self.names, self.flint, self.log_dir = client, image, names, flint, log_dir
        self.max_steps, self.timeout_s = max_steps, timeout_s  # the run's step limit and request timeout it keeps
        self.container: Any = None

    def __enter__(self) -> str:
        names = self.names
        name = f"{names.prefix}-recorder"
        remove_container(self.client, name)
        ensure_network(self.client, names.bridge_network, internal=False, labels=names.labels("network"))
        rule = f"0.0.0.0:{RECORDER_PORT}={self.flint[0]}:{self.flint[1]}"
        self.container = self.client.containers.run(
            self.image,
            [
                "python3",
                "/opt/agentbench/record_proxy.py",
                "--log",
                "/log/proxy.jsonl",
                *(["--max-steps", str(self.max_steps)] if self.max_steps else []),  # it keeps the step limit
                *(["--timeout", f"{self.timeout_s:g}"] if self.timeout_s else []),  # and the longest answer
                rule,
            ],
            name=name,
            detach=True,
            network=names.bridge_network,
            labels=names.labels("forwarder"),  # removed with the bench's other leftovers, as the forwarder is
            log_config=LOG_CONFIG,
            user="0:0",  # writes the log into the host folder, which nothing else mounts
            volumes={str(self.log_dir): {"bind": "/log", "mode": "rw"}},
            read_only=True,
            cap_drop=["ALL"],
            cap_add=["DAC_OVERRIDE"],
            security_opt=["no-new-privileges"],
            mem_limit="256m",
            pids_limit=64,
        )
        network = self.client.networks.get(sandbox_network(self.client, names))
        network.connect(self.container, aliases=[RECORDER_ALIAS])
        self._wait_listening()
        return f"http://{RECORDER_ALIAS}:{RECORDER_PORT}"

    def _wait_listening(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.container.reload()
            if self.container.status != "running":
                break
            if b"recording" in self.container.logs():
                return
            time.sleep(0.2)
        logs = self.container.logs().decode(errors="replace")[-400:]
        self.__exit__()
        raise SandboxError(f"the recording proxy's container did not start listening: {logs}")

    def __exit__(self, *exc: object) -> None:
        if self.container is not None:
            self.container.stop(timeout=5)  # SIGTERM: the proxy closes its log
            remove_container(self.client, self.container.id)
            self.container = None
