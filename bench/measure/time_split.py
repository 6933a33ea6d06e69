"""A run's wall time split into its parts, and the hardware's floor (docs/results.md):

    wall_s = flint_model_s + jeff_model_s + tools_s + server_stall_s + own_s

flint_model_s and jeff_model_s are the servers' own timings of their answers (prompt_ms + predicted_ms), tools_s
the tools' and done checks' time (bench/measure/tool_time.py), server_stall_s the time the servers lost not computing
(bench/measure/stall.py: stopped, starved, hung; it is the servers', not the harness's), and own_s the rest: the
harness's own time (the agent, HTTP, the sandbox starting and stopping). The parts are TIME_PARTS, in that order.
The floor is the time the run's work takes at the servers' own speeds, measured once per server start
(bench/llama/speed.py): the prompt tokens the servers computed (timings.prompt_n) and the tokens they generated.
Where one of the run's own requests went faster than that measurement (on a shared machine the measurement can land
in a busy moment), the floor takes the faster speed: each request then took at least its tokens at the floor's
speeds, so floor_s <= model time <= wall_s. efficiency = floor_s / wall_s.

Where llama-bench could measure the servers' build, model and settings (embedded servers, bench/llama/llama_bench.py)
the floor is the run's requests at its speeds instead, each at most its own time (bench/measure/floor.py;
floor_method says which), and server_overhead_s = model time - that floor: what llama-server's requests cost
beyond llama.cpp's own benchmark.
Each server's model time is also split into prefill (prompt_ms) and decode (predicted_ms): the two add up to it.
flint_http_s is what Flint's requests took beyond the server's timings (HTTP, JSON, the chat template), a part of
own_s.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.measure.floor import CALIBRATION, METHOD, BenchSpeeds, floor_at_bench_speeds
from bench.measure.stall import server_time
from bench.measure.trace import Event, int_field
from bench.measure.trace_numbers import TraceNumbers, flint_answers, jeff_answers
from bench.results.row import ResultRow

CLOCK_SLACK_S = 0.01  # the trace's times and the server's are two clocks: a request may seem this much shorter
# The parts wall_s is split into, in the order the report shows them; own_s is what is left of wall_s.
TIME_PARTS = ("flint_model_s", "jeff_model_s", "tools_s", "server_stall_s", "own_s")


@dataclass(frozen=True)
class Speeds:
    """A server's measured speeds (bench/llama/speed.py)."""

    prompt_tps: float  # prompt tokens computed per second
    gen_tps: float  # tokens generated per second


@dataclass(frozen=True)
class ServerSpeeds:
    """Each server's speeds; None where it was not measured (or there is no Jeff)."""

    flint: Speeds | None
    jeff: Speeds | None
    flint_bench: BenchSpeeds | None = None  # llama-bench's, where it could run (bench/llama/llama_bench.py)
    jeff_bench: BenchSpeeds | None = None


def fill_time_split(
    row: ResultRow, events: list[Event], numbers: TraceNumbers, speeds: ServerSpeeds | None, jeff_on: bool
) -> None:
    """flint_model_s, its prefill and decode, own_s, floor_s, efficiency and the speeds, from a row whose wall_s,
    tools_s, server_stall_s and jeff_model_s are already filled."""
    if numbers.model_s is not None:
        row.flint_model_s = round(numbers.model_s - (numbers.jeff_model_s or 0.0), 3)
    row.flint_prompt_s, row.flint_gen_s = numbers.flint_prompt_s, numbers.flint_gen_s
    row.jeff_prompt_s, row.jeff_gen_s = numbers.jeff_prompt_s, numbers.jeff_gen_s
    row.flint_http_s = outside_seconds(events)
    row.own_s = own_seconds(row, jeff_on)
    if speeds is None:
        return
    calibrated = ServerSpeeds(
        faster(speeds.flint, run_speeds(flint_answers(events))), faster(speeds.jeff, run_speeds(jeff_answers(events)))
    )
    for prefix, measured in (("flint", calibrated.flint), ("jeff", calibrated.jeff)):
        if measured is not None:
            setattr(row, f"{prefix}_prompt_tps", round(measured.prompt_tps, 1))
            setattr(row, f"{prefix}_gen_tps", round(measured.gen_tps, 1))
    benched = bench_floor(events, speeds, jeff_on)
    if benched is not None:
        row.floor_s, row.floor_method = benched, METHOD
        flint_points = speeds.flint_bench.points if speeds.flint_bench else ()
        row.floor_depths = " ".join(str(point.depth) for point in flint_points)
        if numbers.model_s is not None:
            row.server_overhead_s = round(numbers.model_s - benched, 3)
    else:
        row.floor_s = floor_seconds(events, numbers, calibrated, jeff_on)
        row.floor_method = CALIBRATION if row.floor_s is not None else ""
    if row.floor_s is not None and row.wall_s:
        row.efficiency = round(row.floor_s / row.wall_s, 4)


def own_seconds(row: ResultRow, jeff_on: bool) -> float | None:
    """wall_s less every other part; None when one of them was not measured (Jeff's counts only when he is on)."""
    parts = [getattr(row, name) for name in TIME_PARTS if name != "own_s" and (jeff_on or name != "jeff_model_s")]
    if row.wall_s is None or any(part is None for part in parts):
        return None
    return round(row.wall_s - sum(part for part in parts if part is not None), 3)


def bench_floor(events: list[Event], speeds: ServerSpeeds, jeff_on: bool) -> float | None:
    """The run's answered requests at llama-bench's speeds (Flint's, and Jeff's when he is on); None unless
    llama-bench measured every server that answered."""
    if speeds.flint_bench is None:
        return None
    flint = floor_at_bench_speeds(flint_answers(events), speeds.flint_bench)
    if not jeff_on:
        return None if flint is None else round(flint, 3)
    answered = jeff_answers(events)
    jeff = floor_at_bench_speeds(answered, speeds.jeff_bench) if speeds.jeff_bench else (None if answered else 0.0)
    return None if flint is None or jeff is None else round(flint + jeff, 3)


def outside_seconds(events: list[Event]) -> float | None:
    """Flint's answered requests: each one's latency (from the event before its response, as bench/measure/stall.py
    reads it) minus the server's own timings, summed; None when there is none, or one lacks its timings or claims
    more time than its latency (a server's clock that cannot be checked against the client's)."""
    total, last_t, answered = 0.0, None, 0
    for event in events:
        t = event.get("t")
        if not isinstance(t, (int, float)) or isinstance(t, bool):
            continue
        if event.get("event") == "response" and last_t is not None:
            server = server_time(event.get("timings"))
            outside = None if server is None else (t - last_t) - server
            if outside is None or outside < -CLOCK_SLACK_S:  # no timings, or more than the client waited: not known
                return None
            total, answered = total + max(outside, 0.0), answered + 1
        last_t = t
    return round(total, 3) if answered else None


def floor_seconds(events: list[Event], numbers: TraceNumbers, speeds: ServerSpeeds, jeff_on: bool) -> float | None:
    """The run's computed prompt tokens and generated tokens at the measured speeds; None when a part is unknown."""
    flint = _seconds(numbers.prompt_tokens_reprocessed, numbers.completion_tokens, speeds.flint)
    if not jeff_on:
        return None if flint is None else round(flint, 3)
    answered = jeff_answers(events)  # his opinions, summaries and steps: numbers.jeff_completion_tokens' requests
    computed = [int_field((e.get("timings") or {}).get("prompt_n")) for e in answered]
    jeff_prompt = None if any(c is None for c in computed) else sum(c for c in computed if c is not None)
    jeff = _seconds(jeff_prompt, numbers.jeff_completion_tokens, speeds.jeff) if answered else 0.0
    return None if flint is None or jeff is None else round(flint + jeff, 3)


def _seconds(prompt: int | None, generated: int | None, speeds: Speeds | None) -> float | None:
    if prompt is None or generated is None or speeds is None or speeds.prompt_tps <= 0 or speeds.gen_tps <= 0:
        return None
    return prompt / speeds.prompt_tps + generated / speeds.gen_tps


def run_speeds(answers: list[Event]) -> Speeds | None:
    """The fastest prompt and generation speeds of one server's answered requests (flint_answers, jeff_answers),
    from the server's timings; None where none says."""
    prompt, generated = [], []
    for event in answers:
        timings = event.get("timings")
        if not isinstance(timings, dict):
            continue
        prompt.append(_rate(timings.get("prompt_n"), timings.get("prompt_ms")))
        generated.append(_rate(timings.get("predicted_n"), timings.get("predicted_ms")))
    best_prompt = max((r for r in prompt if r is not None), default=0.0)
    best_gen = max((r for r in generated if r is not None), default=0.0)
    return Speeds(best_prompt, best_gen) if best_prompt or best_gen else None


def faster(measured: Speeds | None, run: Speeds | None) -> Speeds | None:
    """The calibration, each speed raised to the run's own where that was faster; None without a calibration."""
    if measured is None or run is None:
        return measured
    return Speeds(max(measured.prompt_tps, run.prompt_tps), max(measured.gen_tps, run.gen_tps))


def _rate(tokens: object, ms: object) -> float | None:
    count = int_field(tokens)
    if count is None or count <= 0 or not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms <= 0:
        return None
    return count / (ms / 1000)
