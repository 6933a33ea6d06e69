"""Servers that come back: an external or compose server that stops answering is waited for, not written off.

A kubelet restarting a crashed sidecar, a supervisor restarting a shared server, Docker restarting a container:
for a while the server refuses connections, or answers 503 while its model loads. Booking every queued run
infra_error meanwhile would empty a whole shard in a second. So the servers of a kind that something else brings
back (bench.servers.kinds.Kind.waited_for) are waited for: /health polled with back-off for at most server_wait_s.
Once every server answers (and still serves the window it served), the run the outage cut short runs again (at
most RERUNS times; the attempt's folder stays, as `<run_id>.interrupted`, and the new row's `error` says it is a
re-run). Only when the wait runs out is the run booked infra_error: compose servers are then started again; external
ones cannot be, so the bench stops in one line, every row kept, the rest of the plan left to --resume (and listed
missing by bench merge). Embedded servers are restarted at once, as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bench import stopping
from bench.errors import ServerStartError
from bench.llama.api import is_healthy
from bench.run.server_faults import hung
from bench.servers.base import Endpoints, check_windows
from bench.servers.kinds import Kind

# /health polled after 0.5 s, then every second: a server back after a restart of a few seconds runs the next run at
# once, not up to 5 s later (a back-off to 5 s cost the k8s play 9 s of its 12 s wait); a local GET a second is cheap.
FIRST_POLL_S, MAX_POLL_S = 0.5, 1.0
RERUNS = 1  # how often one planned run runs again after an outage cut it short
log = logging.getLogger(__name__)


def wait_for_health(
    urls: Sequence[str],
    budget_s: float,
    healthy: Callable[[str], bool] = is_healthy,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = stopping.sleep,  # a worker's stop is seen (bench.stopping)
) -> float | None:
    """The seconds until every URL answered /health again, polled with back-off; None when `budget_s` ran out."""
    start, delay = clock(), FIRST_POLL_S
    while True:
        if all(healthy(url) for url in urls):
            return round(clock() - start, 1)
        left = budget_s - (clock() - start)
        if left <= 0:
            return None
        sleep(min(delay, left))
        delay = min(delay * 2, MAX_POLL_S)


@dataclass(frozen=True)
class Outages:
    """How one bench meets servers that stopped answering: its server kind, server_wait_s, and Jeff's window."""

    kind: Kind
    budget_s: float
    jeff_ctx: int

    @property
    def waits(self) -> bool:
        return self.kind.waited_for and self.budget_s > 0

    def after(self, outage: str | None, infra_error: bool, last: bool) -> str:
        """What follows an attempt: "final" (its row counts), "restart" (a server of the bench's own took a request
        and hung, its slot still busy: started anew for the re-run) or "wait" (waited for, then run again)."""
        if last or not (infra_error and outage):
            return "final"
        if hung(outage) and self.kind.restarts:
            return "restart"
        return "wait" if self.waits else "final"

    def rerun_note(self, run_id: str, outage: str | None, seconds: float | None) -> str:
        """For the re-run's row: the attempt an outage cut short, and how the servers came back (None: restarted)."""
        back = "were started anew" if seconds is None else f"answered again {seconds:.1f} s later"
        return f"re-run: {run_id} was cut short ({outage}); the servers {back}"

    def gave_up_note(self) -> str:
        return f"the servers did not answer again within server_wait_s={self.budget_s:g}"

    def wait(self, endpoints: Endpoints, why: str) -> tuple[Endpoints, float] | None:
        """The servers of `endpoints` once they answer again, their /props read anew (a server that came back with
        another window is refused in one line), and the seconds it took; None when they did not within the budget."""
        log.warning("%s: waiting up to %g s (server_wait_s) for the servers to answer again", why, self.budget_s)
        seconds = wait_for_health(endpoints.urls, self.budget_s)
        if seconds is None:
            return None
        jeff_ctx = endpoints.jeff_ctx or self.jeff_ctx  # the window the bench started Jeff with, else the setting's
        flint, jeff = check_windows(endpoints.flint_url, endpoints.ctx, endpoints.jeff_url, jeff_ctx)
        log.warning("the servers answer again after %.1f s", seconds)
        return replace(endpoints, flint=flint.props, jeff=jeff.props if jeff else None), seconds

    def before_run(self, endpoints: Endpoints | None, healthy: bool, run: str) -> Endpoints | None:
        """The servers a run is about to use: `endpoints` as they are when `healthy`; else, where the bench waits for
        them, once they answer again, or None (started anew, or the bench stops here: give_up)."""
        if endpoints is None or healthy or not self.waits:
            return endpoints
        why = f"the servers stopped answering before run {run}"
        if (back := self.wait(endpoints, why)) is None:
            self.give_up(why)
            return None
        return back[0]

    def give_up(self, why: str) -> None:
        """After a wait that ran out: the bench starts the servers again where it can; else it stops, in one line."""
        if not self.kind.restarts:
            raise ServerStartError(
                f"{why}, and the servers did not answer /health again within server_wait_s={self.budget_s:g}: the "
                "bench stops here, its rows kept; bring them back, then run it again with --resume"
            )
        log.warning("the servers did not answer again within server_wait_s=%g s: starting them again", self.budget_s)
