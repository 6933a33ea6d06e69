"""Speculative decoding end to end with the real CPU server: `bench run --flint-server-args "--spec-type ngram-simple
..."` gives a row whose drafted and accepted tokens, summed from the answers' timings, equal the rise of Flint's own
/metrics counters over the run (draft_check ok), and whose spec_type says how it drafted (a comparison key). One
two-step bench (Jeff off) on the suite's small task (tests/small_task.py); n-grams of 2 tokens drafting up to 8, so
that a small model copying names from its prompt drafts within two answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from small_task import NAME
from small_task import ROOT as TASKS

from bench.results.append import read_rows
from bench.results.schema import SETUP_COLUMNS

pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("speculative")]
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "use_jeff: false\nagent_retries: 1\nagent_retry_delay_s: 0.1\n"
SPEC = "--spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 8"


def test_a_row_with_speculative_decoding_records_its_drafts_as_metrics_counted_them(tmp_path: Path) -> None:
    (tmp_path / "bench.yaml").write_text(SETTINGS)
    out = tmp_path / "spec.csv"
    run = ["run", "--servers", "embedded", "--sandbox", "local", "--ctx", "1024", "--presets", "part3"]
    run += ["--fixtures", NAME, "--fixtures-root", str(TASKS), "--max-steps", "2", "--flint-server-args", SPEC]
    argv = [sys.executable, "-m", "bench", *run, "--config", str(tmp_path / "bench.yaml"), "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = read_rows(out)
    shown = ("steps", "draft_tokens", "draft_accepted", "draft_check", "cached_tokens", "n_tokens_max")
    print({name: row[name] for name in (*shown, "n_tokens_max_metrics")})
    assert (row["spec_type"], row["draft_model"], row["flint_server_args"]) == ("ngram-simple", "", SPEC)
    assert row["draft_check"] == "ok", row["error"]
    assert int(row["draft_tokens"]) > 0
    assert (row["draft_tokens"], row["draft_accepted"]) == (row["draft_tokens_metrics"], row["draft_accepted_metrics"])
    assert int(row["draft_accepted"]) <= int(row["draft_tokens"])
    assert row["cached_tokens"] == row["cache_tokens"] != ""  # the usage's count and the timings' agree
    # the server's lifetime n_tokens_max, where the run raised it past the bench's speed requests: one fewer than the
    # answers' peak (the last token is never decoded), or more (drafts are decoded before they are rejected)
    assert row["n_tokens_max"] != ""
    if row["n_tokens_max_metrics"]:
        assert int(row["n_tokens_max_metrics"]) >= int(row["n_tokens_max"]) - 1, row["error"]
    assert {"spec_type", "draft_model"} <= set(SETUP_COLUMNS)  # never pooled with a row that does not draft
