"""Fakes of the Servers and Sandbox protocols, so that a test of the pipeline (plan, observe, grade, record, resume)
needs no llama-server, no container and no agent process.

FakeServers serves Flint (and Jeff) from scripted llama-servers in threads of this process (bench.testing.fake_llama).
FakeSandboxes plays one ScriptedRun per run instead of starting the agent: it writes the run's files into the work
copy and its trace into the out folder, and counts the trace's requests on the fake Flint, so that the bench's
cross-check of the trace against /metrics holds as it would for a real run. Grading stays real (the local grader).

    servers = FakeServers()
    sandboxes = FakeSandboxes(servers, [ScriptedRun(files={"todo.py": solution}), ScriptedRun(exit_code=None)])
    rows = Bench(config, FakeFactory(config, servers, sandboxes, checkout=ROOT), checkout=ROOT).run()
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agents.article import Props
from bench.agents.base import AgentCommand
from bench.config import BenchConfig, Choice
from bench.errors import SandboxError, ServerStartError
from bench.run.choices import Factory, Host
from bench.sandbox.base import AgentRun, Sandboxes
from bench.servers.base import Endpoints, Servers
from bench.servers.choose import HostGpu
from bench.servers.kinds import Kind
from bench.testing.fake_llama import FakeLlama

NO_GPU = HostGpu(nvidia_gpu="", docker=False, toolkit="", llama_gpus=())


class FakeServers:
    """Flint, and Jeff when `jeff`, as scripted llama-servers in this process; `fail_starts` starts fail first."""

    build_pin = ""

    def __init__(self, *, jeff: bool = False, fail_starts: int = 0) -> None:
        self.with_jeff = jeff
        self.fail_starts = fail_starts
        self.flint: FakeLlama | None = None
        self.jeff: FakeLlama | None = None
        self.starts: list[int] = []  # the window of each start
        self.jeff_starts: list[int | None] = []  # Jeff's window of each start (None: not given, so Flint's)
        self.dead = False

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        self.stop()
        self.starts.append(ctx)
        self.jeff_starts.append(jeff_ctx)
        if self.fail_starts:
            self.fail_starts -= 1
            raise ServerStartError(f"fake Flint refused to start at ctx {ctx}")
        self.flint = FakeLlama(n_ctx=ctx).start()
        jeff_n_ctx = jeff_ctx or ctx
        self.jeff = FakeLlama(n_ctx=jeff_n_ctx, model_path="/models/fake-jeff.gguf").start() if self.with_jeff else None
        self.dead = False
        return Endpoints(
            ctx=ctx,
            flint_url=self.flint.url,
            flint=_props(self.flint),
            flint_model_path=None,
            jeff_url=self.jeff.url if self.jeff else None,
            jeff=_props(self.jeff) if self.jeff else None,
            jeff_ctx=jeff_ctx if self.jeff else None,
        )

    def kill(self) -> None:
        """Flint dies, as a server does mid-run."""
        self.dead = True

    def healthy(self) -> bool:
        return self.flint is not None and not self.dead

    def log_tail(self, lines: int = 20) -> str:
        return f"(fake servers: started at {self.starts})"

    def stop(self) -> None:
        for server in (self.flint, self.jeff):
            if server is not None:
                server.stop()
        self.flint = self.jeff = None


def _props(server: FakeLlama) -> Props:
    return Props(n_ctx=server.n_ctx, model=server.model_path, build=server.build_info, supports_tool_calls=True)


@dataclass
class ScriptedRun:
    """What one run of the agent does, played back: files it writes, its trace, how its process ended."""

    files: dict[str, str] = field(default_factory=dict)  # path in the work copy -> new content
    steps: int = 1  # answered requests to Flint in the default trace
    stop_reason: str = "done"
    events: list[dict[str, Any]] | None = None  # the trace as written; None: made from steps and stop_reason
    exit_code: int | None = 0
    timed_out: bool = False
    infra_error: str | None = None
    changes_lost: str | None = None
    kill_servers: bool = False  # Flint dies during the run

    def trace(self, n_ctx: int) -> list[dict[str, Any]]:
        if self.events is not None:
            return self.events
        events: list[dict[str, Any]] = [{"t": 0.0, "event": "start", "n_ctx": n_ctx, "preset": "part3"}]
        for step in range(1, self.steps + 1):
            prompt = 800 + 100 * step
            timings = {"cache_n": 0, "prompt_n": prompt, "prompt_ms": 50.0, "predicted_n": 20, "predicted_ms": 80.0}
            usage = {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}
            events.append(
                {
                    "t": step * 0.1,
                    "event": "response",
                    "step": step,
                    "finish_reason": "stop",
                    "usage": usage,
                    "timings": timings,
                }
            )
        events.append({"t": self.steps * 0.1 + 0.1, "event": "stop", "reason": self.stop_reason, "steps": self.steps})
        return events


class FakeSandbox:
    """One run's sandbox: plays its ScriptedRun into the work copy and the out folder."""

    trace_owner: int | None = None

    def __init__(self, script: ScriptedRun, servers: FakeServers, n_ctx: int) -> None:
        self.script = script
        self.servers = servers
        self.n_ctx = n_ctx

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent: AgentCommand
    ) -> AgentRun:
        script = self.script
        if script.infra_error:
            return AgentRun(None, False, 0.0, "", infra_error=script.infra_error)
        for rel, text in script.files.items():
            (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
            (workdir / rel).write_text(text)
        events = script.trace(self.n_ctx)
        (out_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        for event in events:  # served by the fake Flint, as far as its /metrics can tell
            if event.get("event") == "response" and self.servers.flint is not None:
                self.servers.flint.count(event["timings"])
        if script.kill_servers:
            self.servers.kill()
        timings = [e["timings"] for e in events if e.get("event") == "response" and "timings" in e]
        served_s = sum(t["prompt_ms"] + t["predicted_ms"] for t in timings) / 1000  # the run lasts at least that
        output = f"(scripted run: {len(events)} events)"
        return AgentRun(script.exit_code, script.timed_out, served_s + 0.1, output, changes_lost=script.changes_lost)


class FakeSandboxes:
    """A sandbox kind whose sandboxes play `runs` in order (then the default ScriptedRun); local grading."""

    kind = "fake"
    engine = None

    def __init__(self, servers: FakeServers, runs: Iterable[ScriptedRun] = ()) -> None:
        self.servers = servers
        self.runs = deque(runs)
        self.endpoints: Endpoints | None = None
        self.closed = False

    def server_host(self) -> str:
        return "127.0.0.1"

    def connect(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def healthy(self) -> bool:
        return True

    def sandbox(self, run_label: str, language: str = "python") -> FakeSandbox:
        if self.endpoints is None:
            raise SandboxError("the fake sandboxes were not connected to servers")
        script = self.runs.popleft() if self.runs else ScriptedRun()
        return FakeSandbox(script, self.servers, self.endpoints.ctx)

    def close(self) -> None:
        self.closed = True


def given_kind(name: str, servers: Servers) -> Kind:
    """A server kind of a test's own (bench.servers.kinds.Kind): it hands out `servers`, and is probed, built and
    placed nowhere."""
    return Kind(
        name, lambda making: servers, needs_gpu_probe=False, needs_docker=False, package_build=False, pins_a_card=False
    )


class FakeFactory(Factory):
    """The runner's factory, building the fakes instead of probing this host."""

    def __init__(self, config: BenchConfig, servers: FakeServers, sandboxes: Sandboxes, *, checkout: Path) -> None:
        fake = Choice("fake", "a test's fakes")  # sandboxes: FakeSandboxes, or a real kind to run a real agent
        super().__init__(
            config,
            fake,
            fake,
            Host(None, NO_GPU),
            sandboxes=sandboxes,
            server_kind=given_kind("fake", servers),
            checkout=checkout,
        )
        self.fake_servers = servers
