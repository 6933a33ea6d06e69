""".github/workflows/bench-matrix.yml run as GitHub runs it, job by job: the workflow's own run: blocks with the shell
GitHub uses, `needs` outputs and the shard matrix expanded, `if: always()` honoured, artifacts uploaded and downloaded
by the actions' documented rules (the helpers of tests/ci/test_nightly_workflow.py). Only the GPU is stubbed: `make
bench` runs the real `python -m bench run --shard` against a scripted Flint, `make setup` does nothing. The shards run
once (module fixture); the merge job is then run on what they delivered, with and without an earlier result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from ci.test_nightly_workflow import SHELLS, Artifact, download, evaluate, substitute, upload
from small_task import NAME as TASK
from small_task import ROOT as ROOT_OF_TASKS

from bench.testing import fake_llama

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "bench-matrix.yml").read_text())
MAKE_STUB = """#!/bin/sh
echo "$@" >> "$MAKE_LOG"
[ "$1" = setup ] && exit 0
[ "$1" = bench ] || exit 2
for arg; do
  case "$arg" in CONFIG=*) config=${arg#CONFIG=};; SHARD=*) shard=${arg#SHARD=};; OUT=*) out=${arg#OUT=};; esac
done
exec .venv/bin/python -m bench run --config "$config" --shard "$shard" --out "$out"
"""
# The suite's small task (tests/small_task.py): these tests read the plan, the shards and the merge, not the grading.
MATRIX = f"use_jeff: false\nservers: external\nsandbox: local\nfixtures_root: {ROOT_OF_TASKS}\nfixtures: [{TASK}]\n"
MATRIX += "presets: [part2]\nctx: [4096]\n"
MATRIX += "reps: 2\nmax_steps: 1\nagent_retries: 0\n"
INPUTS = {"shards": "2", "matrix_config": "matrix.yaml", "gpu_build": "cpu", "first_run": "false"}

# One worker runs the shards once (module fixture) for every test here; spread over two, each would run them again.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("matrix-workflow")]


@dataclass
class Job:
    ok: bool = True
    logs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, Artifact] = field(default_factory=dict)


def run_job(
    tmp: Path,
    name: str,
    inputs: dict[str, str],
    *,
    flint_url: str,
    matrix: dict[str, Any] | None = None,
    needs: dict[str, Any] | None = None,
    artifacts: dict[str, Artifact] | None = None,
    previous: Artifact | None = None,
) -> Job:
    """One job of the workflow in a fresh workspace; `artifacts` are this run's earlier jobs' uploads, `previous` the
    bench-matrix-merged artifact of the last successful run (None: there is none)."""
    spec = WORKFLOW["jobs"][name]
    context: dict[str, Any] = {
        "github": {"event": {"repository": {"default_branch": "main"}}},
        "inputs": inputs,
        "vars": {},
        "matrix": matrix or {},
        "needs": needs or {},
        "steps": {},
    }
    workspace, bin_dir = tmp / "workspace", tmp / "bin"
    for folder in (workspace, bin_dir, tmp / "temp"):
        folder.mkdir(parents=True)
    (workspace / "matrix.yaml").write_text(MATRIX + f"flint_url: {flint_url}\n")  # the checkout's settings file
    python = workspace / ".venv" / "bin" / "python"  # what `make setup` leaves: a venv with the bench
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (bin_dir / "make").write_text(MAKE_STUB)
    (bin_dir / "make").chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp),
        "CI": "true",
        "PYTHONPATH": str(ROOT),
        "MAKE_LOG": str(tmp / "make.log"),
        "RUNNER_TEMP": str(tmp / "temp"),
        "AGENTBENCH_STATE_DIR": str(tmp / "instances"),
    }
    for scope in (WORKFLOW.get("env", {}), spec.get("env", {})):
        env |= {k: substitute(str(v), context) for k, v in scope.items()}
    default_shell = spec.get("defaults", {}).get("run", {}).get("shell")
    job = Job()
    for index, step in enumerate(spec["steps"]):
        if not evaluate(str(step.get("if", "success()")).removeprefix("${{").removesuffix("}}"), context, job.ok):
            continue
        uses: str = step.get("uses", "")
        given = {k: substitute(str(v), context) for k, v in step.get("with", {}).items()}
        if uses.startswith("actions/download-artifact"):  # pattern + merge-multiple: every match into `path`
            pattern = re.compile(given["pattern"].replace("*", ".*"))
            for artifact_name, artifact in (artifacts or {}).items():
                if pattern.fullmatch(artifact_name):
                    download(workspace, artifact, given["path"])
        elif uses.startswith("dawidd6/action-download-artifact"):
            if previous is not None:
                download(workspace, previous, given["path"])
        elif uses.startswith("actions/upload-artifact"):
            found = upload(workspace, given["path"]) if list(workspace.glob(given["path"].rstrip("/"))) else {}
            if found:  # if-no-files-found: ignore
                job.artifacts[given["name"]] = found
        elif "run" in step:
            outputs = tmp / "temp" / f"output-{index}"
            outputs.touch()
            script = tmp / "temp" / f"step-{index}.sh"
            script.write_text(step["run"])
            step_env = env | {k: substitute(str(v), context) for k, v in step.get("env", {}).items()}
            command = SHELLS[step.get("shell", default_shell)].format(script).split()
            done = subprocess.run(
                command,
                cwd=workspace,
                env=step_env | {"GITHUB_OUTPUT": str(outputs)},
                capture_output=True,
                text=True,
                timeout=300,
            )
            job.logs[step["name"]] = done.stdout + done.stderr
            job.ok = job.ok and done.returncode == 0
            values = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
            context["steps"][step.get("id", f"step-{index}")] = {"outputs": values}
    job.outputs = {k: substitute(str(v), context) for k, v in spec.get("outputs", {}).items()}
    return job


@dataclass
class Shards:
    plan: Job
    jobs: list[Job]
    artifacts: dict[str, Artifact]
    first: Job  # the merge job of a declared first run on every shard's artifact
    flint_url: str  # in the checkout's settings file (the merge reads it; the scripted Flint is gone by then)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shards]:
    tmp = tmp_path_factory.mktemp("matrix-workflow")
    with fake_llama.FakeLlama(default=fake_llama.prose("Done.")) as flint:
        plan = run_job(tmp / "plan", "plan", INPUTS, flint_url=flint.url)
        listed = WORKFLOW["jobs"]["shards"]["strategy"]["matrix"]["shard"]
        assert listed == "${{ fromJSON(needs.plan.outputs.shards) }}"
        needs = {"plan": {"outputs": plan.outputs}}

        def shard_job(shard: int) -> Job:
            return run_job(
                tmp / f"shard-{shard}", "shards", INPUTS, flint_url=flint.url, matrix={"shard": shard}, needs=needs
            )

        with ThreadPoolExecutor() as pool:  # the matrix's jobs at once, each on a runner of its own
            jobs = list(pool.map(shard_job, json.loads(plan.outputs["shards"])))
        artifacts = {name: a for job in jobs for name, a in job.artifacts.items()}
        first = run_job(
            tmp / "merge", "merge", INPUTS | {"first_run": "true"}, flint_url=flint.url, artifacts=artifacts
        )
    yield Shards(plan, jobs, artifacts, first, flint.url)


def merge(tmp: Path, shards: Shards, *, previous: Artifact | None = None, keep: str = ".*", **inputs: str) -> Job:
    delivered = {name: a for name, a in shards.artifacts.items() if re.fullmatch(keep, name)}
    return run_job(tmp, "merge", INPUTS | inputs, flint_url=shards.flint_url, artifacts=delivered, previous=previous)


def test_every_shard_runs_its_part_and_a_declared_first_run_merges_them_complete(shards: Shards) -> None:
    assert shards.plan.outputs == {"shards": "[1,2]"}
    assert all(job.ok for job in shards.jobs), [job.logs for job in shards.jobs]
    assert sorted(shards.artifacts) == ["bench-shard-1", "bench-shard-2"]
    assert list(shards.artifacts["bench-shard-2"]) == ["matrix-shard2of2.csv"]  # at the artifact's root
    job = shards.first
    assert job.ok, job.logs
    assert "First run, as declared" in job.logs["Report and compare"]
    kept = job.artifacts["bench-matrix-merged"]
    rows = kept["merged.csv"].decode().splitlines()
    assert len(rows) == 3 and any(name.startswith("merged-report/") for name in kept)


def test_a_shard_that_delivered_nothing_fails_the_merge_naming_the_missing_run(shards: Shards, tmp_path: Path) -> None:
    job = merge(tmp_path, shards, keep="bench-shard-1", first_run="true")
    assert not job.ok
    assert f"{TASK} part2 ctx=4096 rep=2" in job.logs["Merge"]
    assert "Report and compare" not in job.logs  # the merge step failed: nothing is reported or compared


def test_the_gate_compares_with_the_last_good_merged_result_and_never_passes_blind(
    shards: Shards, tmp_path: Path
) -> None:
    blind = merge(tmp_path / "blind", shards)
    assert not blind.ok and "run again with first_run" in blind.logs["Report and compare"]
    again = merge(tmp_path / "again", shards, previous=shards.first.artifacts["bench-matrix-merged"])
    log = again.logs["Report and compare"]
    assert "compare.md" in again.artifacts["bench-matrix-merged"], log
    assert "wall_s" in log  # the gate's verdict on the metric it guards
