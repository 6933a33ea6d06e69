"""What the servers did during a run, decided from the watch (bench.run.server_watch) and the trace: a server that
was down before the run, died, restarted, hung or stalled makes the run infra_error, with a reason naming the
server; a stall below server_stall_limit_s only flags the run. The agent's `server_error` then stays only for answers
the server really gave (a 4xx refusal, an answer it could not parse).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bench.measure.stall import Stall, server_stall
from bench.measure.trace import Event, stop_event
from bench.measure.trace_numbers import ReprocessedCheck
from bench.run.server_watch import COUNTERS, NO_ANSWER, OK, REFUSED, History, Probe


@dataclass
class Verdict:
    """Reasons that make the run infra_error, flags that do not, and the seconds lost to the servers."""

    faults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outages: list[str] = field(default_factory=list)  # the faults of a server that stopped answering /health
    stall_s: float | None = None  # None: no trace, nothing to tell
    after_stop: list[str] = field(default_factory=list)  # faults that came after the agent's stop: the run is kept
    died: bool = False
    flint_restarted: bool = False

    def reprocessed(self, check: ReprocessedCheck | None) -> ReprocessedCheck | None:
        """The /metrics cross-check as the watch tells it: across a restart of Flint, a counter_reset whatever the
        two readings happen to be (a new process may have counted past the old one's first reading)."""
        if not self.flint_restarted or check is None:
            return check
        return ReprocessedCheck("counter_reset", None, "Flint restarted during the run: its /metrics say nothing")


def judge(histories: list[History], events: list[Event], stall_limit_s: float) -> Verdict:
    verdict = Verdict()
    for history in histories:
        faults = watch_faults(history, answered_prompt_tokens(events, history.server.role))
        run = history.until_stop()
        if faults and run is not None and not watch_faults(run, answered_prompt_tokens(events, run.server.role)):
            verdict.after_stop += [f"{fault}, after the agent's stop (t={run.probes[-1].t:.1f} s)" for fault in faults]
        else:
            verdict.outages += faults
    verdict.faults += verdict.outages
    verdict.died = any("died" in fault for fault in verdict.faults)
    verdict.flint_restarted = any(fault.startswith("Flint (") and "restarted" in fault for fault in verdict.faults)
    flint = next((h for h in histories if h.server.role == "Flint"), None)
    named = {fault.split(" (", 1)[0] for fault in verdict.faults}
    if flint is not None and "Flint" not in named and (no_answer := unanswered_stop(events, flint)):
        verdict.faults.append(no_answer)
        verdict.outages.append(no_answer)  # it cut the run short: the run runs again (bench.run.server_return)
        named.add("Flint")
    if events:
        stall = server_stall(events)
        verdict.stall_s = stall.seconds
        _judge_stall(verdict=verdict, stall=stall, histories=histories, named=named, limit=stall_limit_s)
    return verdict


def watch_faults(history: History, answered: int | None = None) -> list[str]:
    """Down before the run, died, restarted, or hung, as the probes of one server show it; `answered`: the prompt
    tokens its answers in the trace say it computed (its counter cannot have grown by less, unless it restarted)."""
    name, probes = history.server.name, history.probes
    if not probes:
        return []
    first, last = probes[0], probes[-1]
    if first.health != OK:
        return [f"{name} was not answering before the run started ({first.health})"]
    gone = next((p for p in probes if p.state in ("gone", "Z")), None)
    if gone is not None:
        return [f"{name} died during the run: its process {history.server.pid} was gone at t={gone.t:.1f} s"]
    if last.health == REFUSED:
        since = _since(probes, lambda p: p.health == REFUSED)
        return [f"{name} died during the run (refusing connections since t={since.t:.1f} s)"]
    restart = restarted(probes) or counted_less(probes, answered)
    if restart:
        return [f"{name} restarted during the run: {restart}"]
    if last.health == NO_ANSWER:
        since = _since(probes, lambda p: p.health == NO_ANSWER)
        return [f"{name} hung: it has not answered /health since t={since.t:.1f} s{_stopped(probes)}"]
    return []


def restarted(probes: list[Probe]) -> str:
    """How the probes show a new server process behind the same URL, or "" when they do not."""
    with_counters = [p for p in probes if p.counters]
    for before, after in zip(with_counters, with_counters[1:], strict=False):
        assert before.counters is not None and after.counters is not None
        for counter, old in before.counters.items():
            new = after.counters.get(counter)
            if new is not None and new < old:
                short = counter.removeprefix("llamacpp:")
                return f"its /metrics {short} went back from {old:.0f} to {new:.0f} (t={after.t:.1f} s)"
    starts = [p for p in probes if p.started is not None]
    if starts and any(p.started != starts[0].started for p in starts):
        return "its process started anew"
    refused = next((i for i, p in enumerate(probes) if p.health == REFUSED), None)
    if refused is not None and any(p.health == OK for p in probes[refused:]):
        back = next(p for p in probes[refused:] if p.health == OK)
        return f"it refused connections at t={probes[refused].t:.1f} s and answered again at t={back.t:.1f} s"
    return ""


def counted_less(probes: list[Probe], answered: int | None) -> str:
    """A counter that grew by less than the answers reported: a new process counted from zero in between, even when
    no probe fell between the old process's last answer and the new one's first."""
    first, last = probes[0].counters or {}, probes[-1].counters or {}
    counter = COUNTERS[0]
    if answered is None or counter not in first or counter not in last:
        return ""
    grown = last[counter] - first[counter]
    if grown >= answered:
        return ""
    return f"its /metrics prompt_tokens_total grew by {grown:.0f}, less than the {answered} its answers reported"


def answered_prompt_tokens(events: list[Event], role: str) -> int | None:
    """The sum of timings.prompt_n over the answers of one server in the trace; None when one lacks it."""
    kind = "jeff" if role == "Jeff" else "response"
    total = 0
    for event in events:
        if event.get("event") != kind or (kind == "jeff" and event.get("timings") is None):
            continue
        prompt_n = (event.get("timings") or {}).get("prompt_n")
        if not isinstance(prompt_n, int) or isinstance(prompt_n, bool):
            return None
        total += prompt_n
    return total


def hung(fault: str) -> bool:
    """Whether an outage is a server that took a request and never answered (unanswered_stop)."""
    return " hung: " in fault and "got no answer in time" in fault


def unanswered_stop(events: list[Event], flint: History) -> str | None:
    """A run the agent stopped with server_error because Flint gave no answer at all: not an answer it gave."""
    stop = stop_event(events)
    if stop is None or stop.get("reason") != "server_error":
        return None
    errors = [e for e in events if e.get("event") == "http_error"]
    if not errors or errors[-1].get("status") is not None:  # the server answered (a 4xx, a 5xx body): the agent's
        return None
    last = errors[-1]
    tries = sum(1 for e in errors if e.get("step") == last.get("step") and e.get("status") is None)
    health = "; /health answered throughout" if all(p.health == OK for p in flint.probes) else ""
    name = flint.server.name
    if last.get("type") == "timeout":
        return f"{name} hung: {tries} request(s) at step {last.get('step')} got no answer in time{health}"
    return f"{name} gave no answer at step {last.get('step')} ({tries} tries): {last.get('message')}"


def _judge_stall(verdict: Verdict, stall: Stall, histories: list[History], named: set[str], limit: float) -> None:
    """A stall above the limit is a fault; below it, a flag; a server already named as faulty is not named twice."""
    parts = [(role, seconds) for role, seconds in (("Flint", stall.flint_s), ("Jeff", stall.jeff_s)) if seconds > 0]
    parts = [(role, seconds) for role, seconds in parts if role not in named]
    if not parts:
        return
    names = {h.server.role: h.server.name for h in histories}
    who = " and ".join(f"{names.get(role, role)} {seconds:.1f} s" for role, seconds in parts)
    evidence = "".join(_unanswered_health(h) for h in histories if h.server.role in dict(parts))
    text = f"servers stalled: {who} lost to requests beyond their own timings (worst: {stall.worst}){evidence}"
    if stall.seconds > limit:
        verdict.faults.append(f"{text}; above server_stall_limit_s={limit:g}")
    else:
        verdict.notes.append(f"{text}; below server_stall_limit_s={limit:g}, so the run counts")


def _unanswered_health(history: History) -> str:
    silent = [p for p in history.probes if p.health == NO_ANSWER]
    if not silent:
        return ""
    return f"; {history.server.role} did not answer /health from t={silent[0].t:.1f} to {silent[-1].t:.1f} s" + (
        _stopped(history.probes)
    )


def _stopped(probes: list[Probe]) -> str:
    return " (its process was stopped: state T)" if any(p.state == "T" for p in probes) else ""


def _since(probes: list[Probe], bad: Callable[[Probe], bool]) -> Probe:
    """The first probe of the run of bad probes that ends the history."""
    index = len(probes) - 1
    while index > 0 and bad(probes[index - 1]):
        index -= 1
    return probes[index]
