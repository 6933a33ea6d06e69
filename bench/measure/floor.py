"""The floor at llama-bench's speeds: what each request's work takes at the speeds llama.cpp's own benchmark measures
for the same build, model and settings (bench/llama/llama_bench.py), at the depth in the window where it happened.

llama-bench measures prompt processing and generation at a few depths (tokens already in the cache). Between two
measured depths the time per token is interpolated linearly (attention's cost grows with the depth); beyond the
deepest one it stays at that depth's, so the floor never takes more than was measured. A request computes its
prompt_n tokens after its cache_n cached ones and generates its predicted_n after the whole prompt: each part is
timed at its middle depth.

A request that went faster than that counts at its own time (its prompt_ms + predicted_ms): on a shared machine
llama-bench can land in a busy moment, and its figure is cached, so without this the floor could exceed the model
time it is a floor of (and server_overhead_s go below 0).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from bench.measure.stall import server_time
from bench.measure.trace import Event, int_field

METHOD = "llama-bench"  # floor_method when floor_s comes from these speeds
CALIBRATION = "calibration"  # floor_method when it comes from the server's own speed calibration


@dataclass(frozen=True)
class DepthSpeed:
    """Prompt and generation speed with `depth` tokens already in the cache."""

    depth: int
    prompt_tps: float
    gen_tps: float


@dataclass(frozen=True)
class BenchSpeeds:
    """llama-bench's speeds of one server's build, model and settings, by depth (at least one, the shallowest first)."""

    points: tuple[DepthSpeed, ...]

    def prompt_s(self, tokens: int, depth: float) -> float:
        return tokens * self._per_token(depth, prompt=True)

    def gen_s(self, tokens: int, depth: float) -> float:
        return tokens * self._per_token(depth, prompt=False)

    def _per_token(self, depth: float, *, prompt: bool) -> float:
        costs = [1 / (p.prompt_tps if prompt else p.gen_tps) for p in self.points]
        depths = [p.depth for p in self.points]
        if depth <= depths[0]:
            return costs[0]
        if depth >= depths[-1]:
            return costs[-1]
        i = bisect_left(depths, depth)
        share = (depth - depths[i - 1]) / (depths[i] - depths[i - 1])
        return costs[i - 1] + share * (costs[i] - costs[i - 1])


def request_seconds(timings: dict[str, Any], speeds: BenchSpeeds) -> float | None:
    """One answered request's prompt_n and predicted_n at llama-bench's speeds; None when its timings do not say."""
    cached, computed, generated = (int_field(timings.get(k)) for k in ("cache_n", "prompt_n", "predicted_n"))
    if cached is None or computed is None or generated is None:
        return None
    prompt_end = cached + computed
    return speeds.prompt_s(computed, cached + computed / 2) + speeds.gen_s(generated, prompt_end + generated / 2)


def floor_at_bench_speeds(answers: list[Event], speeds: BenchSpeeds) -> float | None:
    """One server's answered requests (bench/measure/trace_numbers.py: flint_answers, jeff_answers: the steps', the
    summaries', Jeff's opinions and steps) at llama-bench's speeds, each at most its own server time; None when any
    of them lacks its timings (a partial sum would look measured and be too low)."""
    total = 0.0
    for event in answers:
        timings = event.get("timings")
        seconds = request_seconds(timings, speeds) if isinstance(timings, dict) else None
        own = server_time(timings)
        if seconds is None or own is None:
            return None
        total += min(seconds, own)
    return total
