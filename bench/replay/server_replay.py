"""`bench replay RUN_DIR... --against URL|embedded [...]`: the runs' recorded requests sent to llama-servers again
(bench/replay/send.py), per set-up (bench/replay/targets.py), and what came out (bench/replay/server_report.py).

Embedded set-ups start one server per distinct server settings (runs recorded the same way share it) and stop it
when its runs are done; a URL is someone else's server, used as it is (its prompt cache is emptied before each run
where it allows that).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import ConfigError
from bench.replay.recorded import RecordedRun, drawn, load_run
from bench.replay.send import Sent, replay_run
from bench.replay.server_report import Results, by_answer, mismatches, paired_table, summary_table, write_csv
from bench.replay.targets import Settings, Target, scratch, settings, started, targets

log = logging.getLogger(__name__)
DRAWN_AGAIN = (
    "the server draws its answers again, and a prompt that goes on from one can reuse another part of it (the same "
    "call in other tokens), so prompt_n can differ there; the lines below say where"
)


@dataclass(frozen=True)
class AgainstOptions:
    """`bench replay --against`'s options (bench/cli/replay.py)."""

    run_dirs: list[Path]
    checkout: Path  # this repository: the templates its servers are started with
    against: list[str]
    llama_servers: list[str] = field(default_factory=list)
    model: str | None = None
    server_args: list[str] = field(default_factory=list)
    csv: Path | None = None


def replay_against(runs: list[RecordedRun], target: Target, checkout: Path) -> tuple[list[Sent], list[str]]:
    """Every run's requests sent to one set-up, in the order given; the results and the notes to print (`checkout`:
    this repository, whose fixtures and template a run from before the record is served again with)."""
    if target.url:
        sent, notes = [], []
        for run in runs:
            results, note = replay_run(run, target.url)
            sent += results
            notes += [f"{run.name}: {note}"] if note else []
        return sent, notes
    with scratch() as folder:
        chosen = {run.name: settings(run, target, folder, checkout) for run in runs}
        notes = [f"{name}: {s.note}" for name, s in chosen.items() if s.note]
        by_run: dict[str, list[Sent]] = {}
        for key in dict.fromkeys(s.key() for s in chosen.values()):
            group = [run for run in runs if chosen[run.name].key() == key]
            by_run |= _on_one_server(group, chosen[group[0].name], folder)
    return [s for run in runs for s in by_run[run.name]], notes


def _on_one_server(runs: list[RecordedRun], chosen: Settings, folder: Path) -> dict[str, list[Sent]]:
    with started(chosen, folder) as server:
        log.info("replaying %d run(s) on %s", len(runs), " ".join(server.command()[1:]))
        found = {}
        for run in runs:
            found[run.name], note = replay_run(run, server.url)
            if note:  # the bench's own servers allow it: a failure here is worth a line
                log.warning("%s: %s", run.name, note)
    return found


def command(options: AgainstOptions) -> int:
    for run_dir in options.run_dirs:
        if not run_dir.is_dir():
            raise ConfigError(f"{run_dir} is not a run's folder (results/runs/<run_id>)")
    chosen = targets(options.against, options.llama_servers, options.model, options.server_args)
    runs = [load_run(d) for d in options.run_dirs]
    for run in runs:
        if how := drawn(run):
            print(f"note: {run.name}: {how}: {DRAWN_AGAIN}")
    results: Results = {}
    for target in chosen:
        results[target.label], notes = replay_against(runs, target, options.checkout)
        for note in notes:
            print(f"note: {note}")
    print(report(results))
    if options.csv:
        write_csv(options.csv, results)
        log.info("wrote %s", options.csv)
    return 0


def report(results: Results) -> str:
    lines = []
    for label, sent in results.items():
        requests = len(sent)
        lines += [f"## {label}", "", f"{requests} recorded request(s) of {len({s.run for s in sent})} run(s).", ""]
        lines += [summary_table(sent), ""]
        checked = [s for s in sent if s.recorded.figure("prompt_n") is not None and s.figure("prompt_n") is not None]
        equal = sum(s.figure("prompt_n") == s.recorded.figure("prompt_n") for s in checked)
        line = f"prompt_n as recorded on {equal} of {len(checked)} requests that have a recorded one"
        drawn = by_answer(sent)
        if drawn > 1:
            line += f"; {drawn} more differ only through the server's answers before them"
        elif drawn == 1:
            line += "; 1 more differs only through the server's answer before it"
        lines.append(line + ".")
        lines += [f"- {line}" for line in mismatches(sent)] + [""]
    if len(results) > 1:
        lines += ["## Paired by request", "", paired_table(results), ""]
    return "\n".join(lines)
