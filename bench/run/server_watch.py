"""Watching the servers while a run goes on, so that a fault is classified where it happens (bench.run.
server_faults judges what was seen).

One thread per server probes it every INTERVAL_S: `/health` (ok, refused, no answer within HEALTH_TIMEOUT_S, or
an HTTP status), its `/metrics` counters (which only ever grow while the process lives), and, for a host process,
its state and start time in /proc (T: stopped, e.g. by SIGSTOP; gone; a new start time: another process). A probe
is also taken when the watch starts (the servers' state before the run) and when it stops (after the agent exited).
Probes never raise: whatever a server does, the watch only records it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import http_client
from bench.llama.api import parse_metrics
from bench.servers.base import Endpoints

INTERVAL_S = 1.0  # between probes of one server
HEALTH_TIMEOUT_S = 2.0  # a server that takes longer to answer /health is not answering
COUNTERS = ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", "llamacpp:n_decode_total")
OK, REFUSED, NO_ANSWER = "ok", "refused", "no answer"


@dataclass(frozen=True)
class Watched:
    """One server to watch: its role as rows name it (Flint, Jeff), its URL, and its host process when known."""

    role: str
    url: str
    pid: int | None = None

    @property
    def name(self) -> str:
        return f"{self.role} ({self.url})"


@dataclass(frozen=True)
class Probe:
    """One look at a server, `t` seconds after the watch started."""

    t: float
    health: str  # ok | refused | no answer | HTTP <status> | <other transport error>
    counters: dict[str, float] | None  # COUNTERS that /metrics gave; None when it was not read
    state: str | None = None  # /proc state letter (R, S, D, T, Z), "gone", or None when not a host process
    started: int | None = None  # the process's start time (clock ticks since boot)


@dataclass
class History:
    """Every probe of one server during one run, in order."""

    server: Watched
    probes: list[Probe] = field(default_factory=list)
    at_stop: Probe | None = None  # taken when the agent's stop line was seen: what it was before is the run's

    def until_stop(self) -> History | None:
        """The history up to the agent's stop, when the server answered then (None: no such probe)."""
        if self.at_stop is None or self.at_stop.health != OK:
            return None
        return History(self.server, [p for p in self.probes if p.t <= self.at_stop.t], self.at_stop)


def watched_servers(endpoints: Endpoints) -> list[Watched]:
    """Flint and, when on, Jeff as the bench reaches them, with their host pids (embedded servers)."""
    servers = [Watched("Flint", endpoints.flint_url, endpoints.server_pids.get("flint"))]
    if endpoints.jeff_url:
        servers.append(Watched("Jeff", endpoints.jeff_url, endpoints.server_pids.get("jeff")))
    return servers


class ServerWatch:
    """Probes each server from start() to stop() in a thread of its own (a stopped Flint never delays Jeff's)."""

    def __init__(self, servers: list[Watched], interval_s: float | None = None) -> None:
        self.histories = [History(server) for server in servers]
        self.interval_s = INTERVAL_S if interval_s is None else interval_s
        self.origin = time.monotonic()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> ServerWatch:
        self.origin = time.monotonic()
        for history in self.histories:
            history.probes.append(self.probe(history.server))  # the state before the run, taken at once
            thread = threading.Thread(target=self._watch, args=(history,), name=f"watch-{history.server.role}")
            thread.daemon = True
            thread.start()
            self.threads.append(thread)
        return self

    def stop(self) -> list[History]:
        """The histories, each ending with a probe taken now."""
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=HEALTH_TIMEOUT_S * 3)
        for history in self.histories:
            history.probes.append(self.probe(history.server))
            history.probes.sort(key=lambda probe: probe.t)  # the probe at the agent's stop came from another thread
        return self.histories

    def agent_stopped(self) -> None:
        """Each server probed now, as the agent's stop line is seen: a server that answers here and dies later died
        after the run (bench.run.server_faults keeps the run)."""
        for history in self.histories:
            if history.at_stop is None:
                history.at_stop = self.probe(history.server)
                history.probes.append(history.at_stop)

    def _watch(self, history: History) -> None:
        with _client() as client:
            while not self.stopping.wait(self.interval_s):
                history.probes.append(self.probe(history.server, client))

    def probe(self, server: Watched, client: httpx.Client | None = None) -> Probe:
        state, started = process_state(server.pid) if server.pid else (None, None)
        if client is None:
            with _client() as own:
                return self._probe(server, own, state, started)
        return self._probe(server, client, state, started)

    def _probe(self, server: Watched, client: httpx.Client, state: str | None, started: int | None) -> Probe:
        t = round(time.monotonic() - self.origin, 3)
        health = health_of(client, server.url)
        counters = metrics_of(client, server.url) if health == OK else None
        return Probe(t=t, health=health, counters=counters, state=state, started=started)


def _client() -> httpx.Client:
    # Never a proxy, and a new connection per probe: a kept-alive one could answer for a server that is gone.
    limits = httpx.Limits(max_keepalive_connections=0)
    return http_client.client(timeout=HEALTH_TIMEOUT_S, limits=limits)


def health_of(client: httpx.Client, url: str) -> str:
    try:
        status = client.get(url.rstrip("/") + "/health").status_code
    except httpx.ConnectError:
        return REFUSED
    except httpx.TimeoutException:
        return NO_ANSWER
    except httpx.HTTPError as e:
        return type(e).__name__
    return OK if status == 200 else f"HTTP {status}"


def metrics_of(client: httpx.Client, url: str) -> dict[str, float] | None:
    """The counters /metrics gives (a busy server may take a while: then None, which says nothing)."""
    try:
        response = client.get(url.rstrip("/") + "/metrics")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    values = parse_metrics(response.text)
    return {name: values[name] for name in COUNTERS if name in values}


def process_state(pid: int) -> tuple[str, int | None]:
    """(state letter, start time) of a host process from /proc/PID/stat; ("gone", None) when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone", None
    fields = stat[stat.rfind(")") + 2 :].split()  # after the command name, which may hold spaces and parentheses
    return fields[0], int(fields[19])
