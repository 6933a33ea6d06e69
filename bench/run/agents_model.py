"""Which model a CPU bench gives the agents: SmolLM2, the CPU default, is forced to answer with the article agent's
own tools (bench/llama/forced_tools.py), so a matrix with an agent that writes its own tool calls gets the smallest
model that does, unless the user chose a model; a model chosen that cannot serve them is refused before anything runs.
"""

from __future__ import annotations

from bench.agents.kinds import agent_kind
from bench.config import BenchConfig
from bench.errors import ConfigError
from bench.results.serving import FORCED_SERVING
from bench.run.free_cores import fit_workers
from bench.run.spelling import spelled_with

TOOL_CALLING_CPU_MODEL = "qwen2.5-coder-0.5b"  # the smallest CPU model that writes tool calls of its own


def own_tool_callers(config: BenchConfig) -> list[str]:
    """The matrix's agents that write their own tool calls: every one but those Flint forced to call tools serves."""
    return [name for name in config.agents if not agent_kind(name).forced_tools]


def cpu_model_for_agents(config: BenchConfig) -> tuple[BenchConfig, list[str]]:
    """`config` with Flint's CPU model the smallest that writes its own tool calls where the matrix has an agent that
    needs one and cpu_model was left at its default (SmolLM2, forced to answer with the article agent's tools), and the
    line saying so; every run of the bench gets that model, so the agents' rows compare. A cpu_model the user set is
    kept (and refused for such agents: refuse_forced_tools), as is a flint_tools other than auto."""
    unfit = own_tool_callers(config)
    chosen = "cpu_model" in config.model_fields_set or config.flint_tools != "auto" or config.cpu_models != "small"
    if not unfit or chosen:
        return config, []
    note = (
        f"{spelled_with('cpu_model', TOOL_CALLING_CPU_MODEL)} for every run on a CPU: {', '.join(unfit)} write tool "
        "calls of their own, which the default smollm2 cannot"
    )
    return config.model_copy(update={"cpu_model": TOOL_CALLING_CPU_MODEL}), [note]


def settings_as_run(config: BenchConfig) -> tuple[BenchConfig, list[str]]:
    """The user's settings as this bench runs them, and the lines saying what changed: Flint's CPU model for agents
    with tool calls of their own, the CPU workers the free cores allow (bench.run.free_cores)."""
    config, model_notes = cpu_model_for_agents(config)
    config, worker_notes = fit_workers(config)
    return config, model_notes + worker_notes


def refuse_forced_tools(config: BenchConfig, serving: str) -> None:
    """ConfigError, before anything runs, for agents that write their own tool calls where Flint is forced to call
    tools (`serving`: SmolLM2, the CPU default): every answer would be one of the article agent's tools, and their
    requests fail."""
    unfit = own_tool_callers(config)
    if serving != FORCED_SERVING or not unfit:
        return
    agents = ", ".join(unfit)
    forced_by_setting = config.flint_tools == "forced"
    fix = "set flint_tools: auto" if forced_by_setting else spelled_with("cpu_model", TOOL_CALLING_CPU_MODEL)
    raise ConfigError(
        f"agents: {agents} cannot run on Flint's {config.cpu_model}, which is forced to answer with the article "
        f"agent's own tools (bench/llama/forced_tools.py): {fix} (a model that writes tool calls), or drop {agents}; "
        "nothing was run"
    )
