"""`python -m bench replay RUN_DIR... [--policy P]... [--flint-url URL] [--csv OUT]`: what each clearing policy would
have cost the prompt cache on these runs (bench/replay/walk.py), one table, with what a replay cannot know.

The prompts are counted by a llama-server with the runs' model and chat template: --flint-url names a running one;
without it, runs of a CPU model (cpu_model: SmolLM2, or a Qwen2.5-Coder model) get one started here, with the
template they were served with.
"""

from __future__ import annotations

import csv
import json
import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.analyze.table import fmt_number, markdown_table
from bench.errors import ConfigError, PrerequisiteError
from bench.llama.chunks import cpu_model_file
from bench.llama.cpu_models import CPU_MODELS
from bench.llama.forced_tools import TEMPLATE
from bench.llama.process import LlamaProcess
from bench.llama.serving import FENCED, FENCED_DIR, FORCED, NATIVE, template_args
from bench.llama.tokenizer import ServerTokenizer
from bench.replay.policies import DEFAULT_POLICIES, parse_policy
from bench.replay.walk import CANNOT_KNOW, Replayed, RunTimeline, load_timeline, replay

log = logging.getLogger(__name__)
BASELINE = "before:0.5"  # part3+'s policy: what a new one must beat
COLUMNS_SAY = (
    "answers cut: answers that would have run into the window's end after their prompt (the run's own were not); "
    "runs ended: runs whose next request no longer fit after clearing (their later requests are not counted)."
)


def replay_runs(timelines: list[RunTimeline], names: list[str], tokenizer: ServerTokenizer) -> list[Replayed]:
    """Every run under every policy (`run`: each run's own)."""
    results = []
    for name in names:
        for timeline in timelines:
            policy = parse_policy(name, timeline.preset, timeline.keep, timeline.clear_at)
            outcome = replay(timeline, policy, tokenizer)
            outcome.policy = "run" if name == "run" else policy.name
            results.append(outcome)
    return results


def policy_table(results: list[Replayed], baseline: str = BASELINE) -> str:
    """Per policy: tokens computed anew over all runs, against the baseline policy (not for a policy under which a
    run no longer fits: its later requests are not counted); clearings; answers that would have been cut; runs cut
    short."""
    policies = list(dict.fromkeys(r.policy for r in results))
    if baseline not in policies:
        baseline = "run"
    base = sum(r.total for r in results if r.policy == baseline) or None
    lines = []
    for policy in policies:
        mine = [r for r in results if r.policy == policy]
        total = sum(r.total for r in mine)
        ended = sum(r.ended_at is not None for r in mine)
        versus = f"{100 * (total - base) / base:+.1f}%" if base and policy != baseline and not ended else "—"
        counts = [str(sum(r.clearings for r in mine)), str(sum(r.no_room for r in mine)), str(ended)]
        lines.append([policy, str(sum(len(r.prompt_n) for r in mine)), fmt_number(total), versus, *counts])
    headers = ["policy", "requests", "tokens computed anew", f"vs {baseline}", "clearings", "answers cut", "runs ended"]
    return markdown_table(headers, lines)


def reproduction(results: list[Replayed]) -> str:
    """How closely the runs' own policy reproduces what the server measured, request by request."""
    errors = [
        abs(replayed - measured) / measured
        for r in results
        if r.policy == "run"
        for replayed, measured in zip(r.prompt_n, r.measured, strict=True)
        if measured
    ]
    if not errors:
        return "The runs' own policy could not be checked against measured figures."
    worst = max(errors)
    within = sum(e <= 0.02 for e in errors)
    return (
        f"The runs' own policy reproduces the measured prompt_n within 2% on {within} of {len(errors)} requests "
        f"(largest difference {100 * worst:.1f}%)."
    )


def write_csv(path: Path, results: list[Replayed]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["policy", "run", "steps", "prompt_n", "clearings", "answers_cut", "ended_at"])
        for r in results:
            ended = "" if r.ended_at is None else r.ended_at
            writer.writerow([r.policy, r.run, len(r.prompt_n), r.total, r.clearings, r.no_room, ended])


@contextmanager
def tokenizer_for(run_dirs: list[Path], flint_url: str | None, checkout: Path) -> Iterator[ServerTokenizer]:
    """The tokenizer of --flint-url, or of a server started here with the runs' CPU model, served as they were (with
    `checkout`'s template: this repository's)."""
    if flint_url:
        tokenizer = ServerTokenizer(flint_url)
        yield tokenizer
        tokenizer.close()
        return
    model, args = counting_server(run_dirs, checkout)
    with (
        tempfile.TemporaryDirectory(prefix="agentbench-replay-") as tmp,
        LlamaProcess(model, 2048, Path(tmp) / "flint.log", extra_args=[*args, "--no-warmup"], threads=1) as server,
    ):
        tokenizer = ServerTokenizer(server.url)
        yield tokenizer
        tokenizer.close()


def counting_server(run_dirs: list[Path], checkout: Path) -> tuple[Path, list[str]]:
    """The GGUF and template flags of a server that counts prompts as these runs' Flint did: the CPU model they were
    served (cpu_model: SmolLM2 or a Qwen model, fetched and assembled here when missing) with the same template (of
    `checkout`, this repository).
    PrerequisiteError when they were served another model, or not all alike."""
    infos = [_run_json(d) for d in run_dirs]
    models = {info.get("flint_model", "") for info in infos}
    serving = {info.get("flint_serving", "") for info in infos}
    by_file = {model.file: name for name, model in CPU_MODELS.items()}
    if (
        len(models) > 1
        or len(serving) > 1
        or not models <= {*by_file, ""}
        or not serving <= {NATIVE, FORCED, FENCED, ""}
    ):
        raise PrerequisiteError(
            "these runs were not all served one CPU model (cpu_model) the same way: start a llama-server with their "
            "model and chat template and pass --flint-url"
        )
    (file,), (how,) = models, serving
    model = cpu_model_file(by_file.get(file, "smollm2"))  # no model named: a row from before the column, SmolLM2's
    if how == FORCED:
        return model, ["--jinja", "--chat-template-file", str(checkout / TEMPLATE)]
    return model, template_args(how, checkout / FENCED_DIR)


def _run_json(run_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class ReplayOptions:
    """`bench replay`'s options (bench/cli/replay.py)."""

    run_dirs: list[Path]
    checkout: Path  # this repository: the template a server started here counts with
    policies: list[str] = field(default_factory=list)  # none: DEFAULT_POLICIES
    flint_url: str | None = None  # a server to count prompts with; None: one started here
    csv: Path | None = None


def command(options: ReplayOptions) -> int:
    run_dirs = options.run_dirs
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise ConfigError(f"{run_dir} is not a run's folder (results/runs/<run_id>)")
    names = options.policies or list(DEFAULT_POLICIES)
    for name in names:  # refused before anything starts
        parse_policy(name, "part3")
    timelines = [load_timeline(d) for d in run_dirs]
    with tokenizer_for(run_dirs, options.flint_url, options.checkout) as tokenizer:
        results = replay_runs(timelines, names, tokenizer)
    print(f"Replay of {len(timelines)} run(s), {sum(len(t.steps) for t in timelines)} answered requests.\n")
    print(policy_table(results))
    print(f"\n{reproduction(results)}\n\n{CANNOT_KNOW}\n\n{COLUMNS_SAY}")
    if options.csv:
        write_csv(options.csv, results)
        log.info("wrote %s", options.csv)
    return 0
