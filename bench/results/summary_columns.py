"""The row's columns for the series' next experiments: the summary presets (summary, summary-jeff, hybrid:
agent/summary.py) and the small model first (jeff-first, jeff-gate: agent/jeff_first.py), in a group of their own
between the servers' time (bench/results/server_time.py) and the detail (bench/results/detail_columns.py).
Figures come from the trace's `summary`, `jeff_step` and `escalate` events (bench/measure/summaries.py); files from
before them read as not measured."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col


@dataclass
class SummaryColumns:
    """What the run's summaries cost; None means not measured (an empty cell), 0 that the run made none."""

    summaries: int | None = col(
        "summaries that replaced old material (summary, summary-jeff, hybrid); 0 for a run that made none",
        unit="summaries",
    )
    summaries_left_out: int | None = col(
        "summaries asked for and not used: not smaller than what they would replace, or not written (a server "
        "error); the same material is never asked for twice",
        unit="summaries",
        better="lower",
    )
    summary_tokens: int | None = col(
        "tokens generated for summaries, by Flint or Jeff (part of completion_tokens when Flint wrote them)",
        unit="tokens",
        better="lower",
    )
    summary_model_s: float | None = col(
        "the summaries' model time, Flint's or Jeff's (timings.prompt_ms + predicted_ms; part of their model time)",
        unit="s",
        better="lower",
    )
    reprocessed_by_summary: int | None = col(
        "material sent before, computed again because a summary changed it, and the question of a summary Flint "
        "wrote (a cause of prompt_tokens_reprocessed, beside reprocessed_by_clearing)",
        unit="tokens",
        better="lower",
    )
    jeff_steps: int | None = col(
        "steps Jeff took with the tools instead of Flint (jeff-first, jeff-gate); empty for presets where he does not",
        unit="steps",
    )
    escalations: int | None = col(
        "steps handed to Flint because of Jeff: jeff-first's one handover (at jeff_first_steps, or when Jeff said so, "
        "was cut or failed), jeff-gate's every step he passed or could not take; empty for other presets",
        unit="steps",
    )
    jeff_first_steps: int | None = col(
        "jeff-first's setting K (jeff_steps): the steps Jeff may take before Flint takes over; empty for other presets",
        unit="steps",
        compare="setup",
        resume=True,
    )
    jeff_window: int | None = col(
        "Jeff's window as his server reported it, for the presets where he reads Flint's conversation (summary-jeff, "
        "jeff-first, jeff-gate: jeff_conversation_ctx, by default the run's ctx); empty for the others",
        unit="tokens",
        compare="setup",
        resume=True,
    )
