"""The report's table of clearings and summaries: what each took out of the conversation against what it made the
server compute again (issue: a clearing that replaces a short result by a longer placeholder frees nothing and still
costs the rest of the conversation). Shown where some run's trace says what its clearings freed (`freed_chars`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.agents.article import CHARS_PER_TOKEN
from bench.analyze.causes import MAX_RUNS_SHOWN, load_split
from bench.analyze.runs import Run
from bench.analyze.table import markdown_table
from bench.measure.trace import Event, int_field


def changes(events: list[Event], split: list[dict[str, Any]] | None) -> list[list[str]]:
    """One line per clearing that changed the conversation and per summary used: the step, what it was, the
    characters it freed (and about how many tokens, at the agent's CHARS_PER_TOKEN), and the tokens the next
    request to Flint computed again because of it (its split's clearing and summary causes)."""
    by_request = {r.get("request"): r for r in split or []}
    lines: list[list[str]] = []
    pending: list[list[str]] = []  # changes since the last request: step, what, characters freed
    for event in events:
        kind = event.get("event")
        if (kind == "clear" and event.get("changed")) or (kind == "summary" and event.get("applied")):
            what = f"summary ({event.get('by')})" if kind == "summary" else f"clearing ({event.get('reason')})"
            freed = int_field(event.get("freed_chars"))
            shown = "n/a" if freed is None else f"{freed:,} (≈{freed // CHARS_PER_TOKEN:,} tokens)"
            pending.append([str(event.get("step")), what, shown])
        elif kind == "response" and pending:
            found = by_request.get(event.get("request"))
            again = "n/a" if found is None else str(int(found.get("clearing") or 0) + int(found.get("summary") or 0))
            lines += [[*change, again] for change in pending]
            pending = []
    return lines


def clearings_section(runs: list[Run], runs_dir: Path) -> list[str]:
    """The report's lines for one group; none when no run's trace says what its clearings freed."""
    shown = [run for run in runs[:MAX_RUNS_SHOWN] if run.events and any("freed_chars" in e for e in run.events)]
    lines = []
    for run in shown:
        split = load_split(runs_dir / run.row.run_id)
        lines += [[run.name, *line] for line in changes(run.events or [], split)]
    if not lines:
        return []
    headers = ["run", "step", "what", "characters freed", "tokens computed again (next request)"]
    intro = "Clearings and summaries: what each took out, against what the server then computed again:"
    return [intro, "", markdown_table(headers, lines), ""]
