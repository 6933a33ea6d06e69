"""Before the first run, a bench says when its settings may not measure what the user thinks: repetitions of greedy
sampling repeat one trajectory; `sandbox: auto` without an engine runs the model's commands on this host."""

from __future__ import annotations

import pytest

from bench.config import BenchConfig, Choice
from bench.run.spelling import FROM_MAKE
from bench.run.start_notes import start_warnings

DOCKER = Choice("docker", "a Docker engine answers")
HOST = Choice("local", "neither a Docker engine nor podman's API answers")


def test_repetitions_of_greedy_sampling_are_said_to_measure_timing_noise_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FROM_MAKE, raising=False)
    (note,) = start_warnings(BenchConfig(reps=3), DOCKER)
    assert note.startswith("--reps 3 with greedy sampling (temperature 0): each repetition follows the same")
    monkeypatch.setenv(FROM_MAKE, "1")
    assert start_warnings(BenchConfig(reps=3), DOCKER)[0].startswith("REPS=3 with greedy sampling")
    assert start_warnings(BenchConfig(reps=3, sampling={"temperature": 0.7}), DOCKER) == []
    assert start_warnings(BenchConfig(reps=1), DOCKER) == []


def test_auto_falling_back_to_the_host_is_a_warning_and_local_chosen_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FROM_MAKE, "1")
    (note,) = start_warnings(BenchConfig(), HOST)
    assert note == (
        "sandbox auto: neither a Docker engine nor podman's API answers, so the model's commands run on this host as "
        "this user, not in a container; SANDBOX=docker requires one, SANDBOX=local chooses this knowingly"
    )
    assert start_warnings(BenchConfig(sandbox="local"), HOST) == []
