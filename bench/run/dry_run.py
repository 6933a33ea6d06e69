"""`bench run --dry-run`: what a bench would do, before a matrix of hours: its runs in order, the results file it
would write or continue, and every setting with the place it came from (load_config's order: the command line, the
environment, the settings file, the defaults). Nothing starts: no server, no sandbox, no file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.config import SETTINGS, BenchConfig
from bench.environment import from_environment
from bench.run.agents_model import cpu_model_for_agents
from bench.run.plan import plan_runs
from bench.run.resume_file import results_file
from bench.run.shards import Shard, shard_out, shard_plan
from bench.run.spelling import spelled
from bench.yaml_file import read_mapping

LISTED_RUNS = 50  # runs listed one by one; past this, counted


def sources(path: Path | None, given: Mapping[str, Any]) -> dict[str, str]:
    """Where each setting's value comes from: `command line (--ctx)` (or `make (CTX=)`), `$AGENTBENCH_REPS`, the
    settings file, or `default`."""
    from_file = read_mapping(path, "bench settings") if path is not None else {}
    environment = from_environment(BenchConfig.model_fields)
    found = {}
    for name in SETTINGS:
        if given.get(name) is not None:
            spelling = spelled(name)
            found[name] = f"make ({spelling})" if spelling.endswith("=") else f"command line ({spelling})"
        elif name in environment:
            found[name] = f"${environment[name].variable}"
        elif name in from_file:
            found[name] = str(path)
        else:
            found[name] = "default"
    return found


def dry_run(config: BenchConfig, path: Path | None, given: Mapping[str, Any], checkout: Path) -> str:
    """The runs, the results file and the settings, as text."""
    config, chosen = cpu_model_for_agents(config)  # as the bench will run it
    shard = Shard.parse(config.shard) if config.shard else None
    plan = shard_plan(plan_runs(config, checkout), shard)
    out = shard_out(results_file(config, checkout), shard)
    lines = [f"bench run --dry-run: {len(plan)} runs into {out}; nothing is started"]
    for index, run in enumerate(plan[:LISTED_RUNS], start=1):
        lines.append(f"  run {index}/{len(plan)} {run.fixture.name} {run.label} ctx={run.ctx} rep={run.rep}")
    if len(plan) > LISTED_RUNS:
        lines.append(f"  ... and {len(plan) - LISTED_RUNS} more")
    found = sources(path, given)
    if chosen:
        found["cpu_model"] = "chosen for the agents: " + chosen[0]
    values = {name: _shown(getattr(config, name)) for name in SETTINGS}
    width = max(len(name) for name in SETTINGS)
    value_width = min(max(len(value) for value in values.values()), 40)
    lines.append("settings (auto is resolved when the bench starts, and said then):")
    lines += [f"  {name:<{width}}  {values[name]:<{value_width}}  {found[name]}" for name in SETTINGS]
    return "\n".join(lines)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "(none)"
    return "(none)" if value in (None, "") else str(value)
