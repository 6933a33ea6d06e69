"""What a bench says before its first run when its settings may not measure what the user thinks they do."""

from __future__ import annotations

from collections.abc import Mapping

from bench.config import BenchConfig, Choice
from bench.run.spelling import spelled_with


def start_warnings(config: BenchConfig, sandbox: Choice) -> list[str]:
    """Repetitions under greedy sampling, and a sandbox that `auto` left on this host."""
    found = []
    if config.reps > 1 and _greedy(config.sampling):
        found.append(
            f"{spelled_with('reps', config.reps)} with greedy sampling (temperature 0): each repetition follows the "
            "same trajectory, so the repetitions measure timing noise only; for varied runs set sampling in the "
            "settings file, e.g. {temperature: 0.7}"
        )
    if config.sandbox == "auto" and sandbox.kind == "local":
        found.append(
            f"sandbox auto: {sandbox.reason}, so the model's commands run on this host as this user, not in a "
            f"container; {spelled_with('sandbox', 'docker')} requires one, {spelled_with('sandbox', 'local')} chooses "
            "this knowingly"
        )
    return found


def _greedy(sampling: Mapping[str, object]) -> bool:
    temperature = sampling.get("temperature")
    return isinstance(temperature, (int, float)) and temperature <= 0
