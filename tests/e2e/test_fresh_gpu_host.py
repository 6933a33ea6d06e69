"""`make bench` with bench.yaml as it is, as on a fresh GPU host: it fetches the default Flint and Jeff.

The GPU is played by the CPU build of llama-server and the hub by a local stand-in serving the small model under the
default models' real repository and file names. The seam is what a user on a GPU host could set too: MODEL_ENDPOINT
(llama.cpp's own variable for another hub), MODEL_CACHE (where fetched models go) and CPU_MODELS=configured (serve
the configured models on the CPU, as a GPU build does without being asked). Nothing else differs from a GPU host
without the container toolkit: `servers: auto` picks host servers; the bench fetches their models (checked against the
hub's listing) before they start, and they serve and get hashed.

Served as the configured models, the small model is served natively (flint_tools auto forces tool calls only where
the bench serves the small model as such, cpu_models small): it answers in prose until the window ends, so one step
at a small window keeps the test short.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from bench.llama.binaries import find_small_model
from bench.results.append import read_rows
from bench.results.schema import AGENT_STOP_REASONS
from bench.testing.hub_standin import DEFAULT_FILES, HubStandIn, default_models_as

pytestmark = [pytest.mark.llama, pytest.mark.docker, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
# The smallest window todo_repo's first prompt (about 600 tokens with part3's tools) fits in: the prose that follows
# it fills the rest (at 1,024 tokens, 421 generated tokens took 10.5 of the run's 15 s).
CTX = 1024  # the smallest window todo_repo fits (bench.run.preflight refuses less)


def test_make_bench_fetches_the_default_models_and_records_their_hashes(tmp_path: Path) -> None:
    small = find_small_model()
    out = tmp_path / "results.csv"
    with HubStandIn(default_models_as(small), bytes_per_s=40_000_000) as hub:
        env = dict(os.environ, MODEL_ENDPOINT=hub.url, MODEL_CACHE=str(tmp_path / "cache"), CPU_MODELS="configured")
        args = ["make", "bench", f"CTX={CTX}", "MAX_STEPS=1", f"OUT={out}"]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert list(hub.downloads.values()) == [1, 1], hub.downloads
    flint_file, jeff_file = DEFAULT_FILES.values()
    # fetched and checked before the servers start (bench.servers.shared), which then start offline
    assert f"{flint_file} (" in done.stderr and f"{jeff_file} (" in done.stderr, done.stderr[-3000:]
    (row,) = read_rows(out)
    assert (row["flint_model"], row["jeff_model"]) == (flint_file, jeff_file)
    expected = hashlib.sha256(small.read_bytes()).hexdigest()
    assert row["flint_model_sha256"] == row["jeff_model_sha256"] == expected
    assert row["servers"] == "embedded" and row["ctx"] == str(CTX) and row["flint_serving"] == "native"
    assert row["stop_reason"] in AGENT_STOP_REASONS and row["error"] == "", row["error"]
