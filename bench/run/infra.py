"""Why a run failed for something other than the agent: any reason found here marks its row infra_error.

The servers' faults (down, died, restarted, hung, stalled) come from the watch (bench.run.server_faults), each
naming its server; a server that stopped answering is also the run's outage, which a bench whose servers come back
waits out and runs again (bench.run.server_return).
"""

from __future__ import annotations

from bench.run.record import RunRecord
from bench.run.server_faults import Verdict
from bench.sandbox.base import AgentRun
from bench.servers.base import Servers


def infra_problems(
    record: RunRecord, agent: AgentRun, verdict: Verdict, servers: Servers, way_ok: bool, run_timeout_s: float
) -> None:
    """Note the run's problems outside the agent on `record` (`way_ok`: the sandboxes' way to the servers, the
    forwarder where there is one, still answers), and mark it infra_error when there is one."""
    problems = [agent.infra_error] if agent.infra_error else []
    if agent.timed_out:
        problems.append(f"the run was killed after run_timeout_s={run_timeout_s:.0f}")
    problems += verdict.faults
    healthy = servers.healthy() or bool(verdict.after_stop)  # a death after the agent's stop costs the next run
    if verdict.after_stop:
        record.note(f"{'; '.join(verdict.after_stop)}: the run is kept")
    if not healthy and not verdict.faults:
        problems.append("a llama-server died during the run")
    if not healthy or verdict.died:
        problems.append(f"server log tail: {servers.log_tail(5)!r}")
    elif not way_ok:
        problems.append("the forwarder between the sandboxes and the servers died or stopped answering")
    elif (
        record.numbers is not None
        and record.numbers.stop_reason is None
        and not (problems or record.resource_exhausted)
    ):
        problems.append(f"the agent exited with status {agent.exit_code} without a stop event: see agent.log")
    for problem in [*problems, *verdict.notes]:
        record.note(problem)
    record.infra_error = record.infra_error or bool(problems)
    if verdict.outages or not healthy:
        record.outage = (verdict.outages or ["a llama-server stopped answering during the run"])[0]
