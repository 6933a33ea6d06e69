"""The row's columns on speculative decoding: how Flint was set to draft (bench/llama/spec_settings.py), keys of a
comparison, and what it drafted and the model accepted, summed from the answers' timings and checked against Flint's
/metrics (bench/measure/speculative.py). The last of the row's column groups (bench/results/row.py ROW_GROUPS);
files from before them ran no speculative decoding of the bench's knowing and read so."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col


@dataclass
class SpeculativeColumns:
    """Flint's speculative decoding; None means not measured (an empty cell)."""

    spec_type: str = col(
        "Flint's --spec-type (ngram-simple, ngram-mod, draft-simple, ...; comma-separated); none: it drafts nothing; "
        "empty: not known (servers the bench did not start)",
        compare="setup",
        before="none",
    )
    draft_model: str = col(
        "the file name of Flint's draft model (--spec-draft-model, -md); empty: none, or not known",
        compare="setup",
        before="",
    )
    draft_model_sha256: str = col(
        "sha256 of Flint's draft model file; empty: no draft model, or its file is not on this machine (a container's)",
        compare="setup",
        before="",
    )
    draft_tokens: int | None = col(
        "tokens Flint's speculative decoding drafted: the answers' timings.draft_n summed; empty where it drafted none",
        unit="tokens",
        before="",
    )
    draft_accepted: int | None = col(
        "drafted tokens the model accepted: the answers' timings.draft_n_accepted summed",
        unit="tokens",
        before="",
    )
    draft_tokens_metrics: int | None = col(
        "the rise of Flint's llamacpp:spec_decode_num_draft_tokens_total over the run, when it can be trusted",
        unit="tokens",
        before="",
    )
    draft_accepted_metrics: int | None = col(
        "the rise of llamacpp:spec_decode_num_accepted_tokens_total over the run, when it can be trusted",
        unit="tokens",
        before="",
    )
    draft_check: str = col(
        "ok: both sums equal their /metrics rise; mismatch; counter_reset (the server restarted); unchecked (reason "
        "in error); empty: nothing was drafted",
        before="",
    )
