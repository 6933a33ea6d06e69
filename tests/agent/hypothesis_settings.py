"""The agent's property tests run few, fixed examples in the fast tier; set AGENT_HYPOTHESIS_EXAMPLES for a longer
search (e.g. 5000 before a release), which also draws new examples each run instead of the same ones."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_EXAMPLES = os.environ.get("AGENT_HYPOTHESIS_EXAMPLES")


def examples(default: int) -> settings:
    """Settings for one property test: `default` examples, the same every run, unless the variable says otherwise."""
    return settings(
        max_examples=int(_EXAMPLES) if _EXAMPLES else default,
        deadline=None,
        derandomize=not _EXAMPLES,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
