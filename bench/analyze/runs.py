"""A results row with its event trace, as the report reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import ResultsError
from bench.measure.trace import TRACE_FILE, Event, Request, load_trace, requests_of
from bench.results.row import ResultRow


@dataclass
class Run:
    """A results row with its trace, for the report; `events` is None when the trace is missing or unreadable."""

    row: ResultRow
    events: list[Event] | None
    note: str = ""  # why the trace could not be used
    requests: list[Request] = field(default_factory=list)

    @property
    def missing(self) -> str:
        return "no trace" if self.note.startswith("no event trace") else "trace unreadable"

    @property
    def traced(self) -> bool:
        """Its trace was read (`events` may since have been let go: `untraced`)."""
        return not self.note

    def untraced(self) -> Run:
        """The run without its trace's events, what the report keeps of it once its group is written."""
        return Run(self.row, None, self.note)

    @property
    def name(self) -> str:
        return f"rep {self.row.rep}" if self.row.rep is not None else self.row.run_id


def load_run(row: ResultRow, runs_dir: Path) -> Run:
    path = runs_dir / row.run_id / TRACE_FILE
    if not path.is_file():
        return Run(row, None, f"no event trace at {path.relative_to(runs_dir.parent)}")
    try:
        events = load_trace(path)
    except ResultsError as e:
        return Run(row, None, str(e))
    return Run(row, events, requests=requests_of(events))
