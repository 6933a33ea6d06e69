"""`make bench` takes its documented variables from its command line only: one left exported in the shell changes no
bench, and make says so; the prefixed names (AGENTBENCH_CTX, ...) reach the bench through the environment, which
the bench reads itself (bench/environment.py). `make -n` prints what would run, without running it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from bench import ROOT

Plan = Callable[..., str]


@pytest.fixture
def plan(child_processes: None) -> Plan:
    def make_n(*args: str, **environment: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBENCH_") and k not in ("CTX", "OUT")}
        env.pop("MAKELEVEL", None)  # as a user's shell runs it, not as a make around pytest does
        done = subprocess.run(
            ["make", "-n", "bench", "SANDBOX=local", *args],
            cwd=ROOT,
            env=env | environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        printed = next(line for line in done.stdout.splitlines() if line.startswith("printf 'make bench:"))
        shown = subprocess.run(["bash", "-c", printed], capture_output=True, text=True, timeout=10).stdout
        command = done.stdout[done.stdout.index("-m bench run") :]
        return shown + "RUNS " + " ".join(command.replace("\\\n", " ").split())

    return make_n


def test_a_variable_left_in_the_environment_changes_nothing_and_make_says_so(plan: Plan) -> None:
    out = plan("CTX=4096", OUT="elsewhere.csv", CTX="8192")
    assert "make bench: CTX=4096 (command line)" in out
    assert (
        "make bench: OUT=elsewhere.csv in the environment: ignored (pass OUT= to make, or export AGENTBENCH_OUT)" in out
    )
    assert "--ctx 4096" in out and "--out" not in out and "8192" not in out.split("RUNS")[1]


def test_the_prefixed_name_is_the_benchs_to_read_and_make_names_it(plan: Plan) -> None:
    out = plan(AGENTBENCH_REPS="3", RESUME="1")
    assert "make bench: AGENTBENCH_REPS=3 (environment)" in out
    assert "RESUME=1 in the environment: ignored" in out
    runs = out.split("RUNS")[1]
    assert "--reps" not in runs and "--resume" not in runs  # the bench reads AGENTBENCH_REPS itself


def test_without_variables_make_says_where_the_settings_come_from(plan: Plan) -> None:
    assert "make bench: SANDBOX=local (command line)" in plan()
