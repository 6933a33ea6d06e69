"""The row's columns on the servers' side of a run's time (bench/measure/time_split.py, bench/measure/floor.py):
Flint's and Jeff's model time split into prefill and decode, the time Flint's requests spent outside the server's
own timings, and the floor at llama-bench's speeds with what the server costs beyond it. They come right after the
contract's columns (bench/results/contract.py) in the row (bench/results/row.py composes the groups); files from
before them read as not measured."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col


@dataclass
class ServerTimeColumns:
    """Where the model time went; None means not measured (an empty cell)."""

    flint_prompt_s: float | None = col(
        "Flint's prefill: timings.prompt_ms summed over its answers (with flint_gen_s, Flint's share of model_s)",
        unit="s",
        better="lower",
    )
    flint_gen_s: float | None = col(
        "Flint's decode: timings.predicted_ms summed over its answers", unit="s", better="lower"
    )
    jeff_prompt_s: float | None = col(
        "Jeff's prefill (timings.prompt_ms); empty when Jeff is off, 0 when he was never asked", unit="s"
    )
    jeff_gen_s: float | None = col("Jeff's decode (timings.predicted_ms)", unit="s")
    flint_http_s: float | None = col(
        "Flint's requests' time outside the server's timings (latency in the trace minus prompt_ms + predicted_ms): "
        "HTTP, JSON, the chat template and tokenizing; part of own_s. Empty when a request's timings exceed its "
        "latency by more than 0.01 s (the two clocks cannot be checked against each other)",
        unit="s",
        better="lower",
    )
    floor_method: str = col(
        "how floor_s was measured: llama-bench (its speeds for the servers' build, model and settings, at the "
        "requests' depths), calibration (the server's own speed at start, when llama-bench could not run), or "
        "empty (no floor)",
    )
    floor_depths: str = col(
        "the depths (tokens already in the cache) at which llama-bench measured Flint's speeds, space-separated: a "
        "request between two is timed at speeds interpolated between theirs, one past the deepest at its speeds "
        "(empty unless floor_method is llama-bench)",
    )
    server_overhead_s: float | None = col(
        "model_s minus the same work at llama-bench's speeds (a request faster than them counts at its own time, "
        "so never below 0): what llama-server's requests cost beyond llama.cpp's own benchmark (empty unless "
        "floor_method is llama-bench)",
        unit="s",
        better="lower",
    )
