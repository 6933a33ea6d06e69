"""The live progress line during a bench, and the summary table after it.

The line follows the agent's trace as it is written: run i of N, fixture, preset, step, the window's use (this
request's tokens of the window's), the tokens sent in the run so far, and the matrix's elapsed time and ETA (from the
runs finished so far; several workers share one clock, so the ETA counts their runs side by side).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from bench.measure.server_figures import FigureReader
from bench.measure.trace import parse_event
from bench.sandbox.trace_file import read_trace_safely


class TraceFollower(threading.Thread):
    """Reads new lines of a growing events.jsonl and reports each event to a callback.

    The sandbox may have turned the file into a trap (a FIFO, a link, gigabytes): it is read the safe way, and only
    up to FOLLOW_LIMIT, past which the live line just stops (the run's figures come from the copy kept after it).
    """

    FOLLOW_LIMIT = 8 * 1024 * 1024

    def __init__(self, path: Path, on_event: Any, interval_s: float = 0.5, owner_uid: int | None = None) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.on_event = on_event
        self.interval_s = interval_s
        self.owner_uid = owner_uid
        self.offset = 0  # characters already reported
        self.stopped = threading.Event()

    def poll(self) -> None:
        text, _ = read_trace_safely(self.path, self.FOLLOW_LIMIT, owner_uid=self.owner_uid)
        if text is None:
            return
        chunk = text[self.offset :]
        complete = chunk[: chunk.rfind("\n") + 1]  # a half-written last line waits for the next poll
        self.offset += len(complete)
        for line in complete.splitlines():
            event, _ = parse_event(line)
            try:
                if event is not None:
                    self.on_event(event)
            except Exception:  # noqa: BLE001 - a live display line: an event it cannot show is skipped
                continue

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.poll()
        self.poll()

    def stop(self) -> None:
        self.stopped.set()
        self.join()


class MatrixClock:
    """The matrix's elapsed time and ETA: the runs measured so far give the pace of the ones left (runs skipped by
    --resume took no time and leave the plan)."""

    def __init__(self, total: int, now: Any = time.monotonic) -> None:
        self.total, self.now = total, now
        self.started = now()
        self.measured = self.skipped = 0
        self.lock = threading.Lock()

    def run_done(self, skipped: bool = False) -> None:
        with self.lock:
            if skipped:
                self.skipped += 1
            else:
                self.measured += 1

    def text(self) -> str:
        """`elapsed 4:10, ETA 12:30`; the ETA only once a run has finished."""
        elapsed = self.now() - self.started
        left = self.total - self.measured - self.skipped
        if not self.measured:
            return f"elapsed {clock(elapsed)}, ETA after the first run"
        return f"elapsed {clock(elapsed)}, ETA {clock(elapsed / self.measured * left)}"


def clock(seconds: float) -> str:
    """`0:42`, `12:05`, `2:03:09`."""
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Prints one status line per run, rewritten in place on a terminal and one line per step elsewhere."""

    def __init__(self, total: int, stream: TextIO | None = None, matrix: MatrixClock | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.label = ""
        self.n_ctx = 0
        self.tokens = 0
        self.matrix = matrix or MatrixClock(total)

    def run_started(self, index: int, fixture: str, preset: str, ctx: int, rep: int) -> None:
        self.label = f"run {index}/{self.total} {fixture} {preset} ctx={ctx} rep={rep}"
        self.n_ctx, self.tokens = ctx, 0
        self._show(f"{self.label}: starting")

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "response":
            figures = FigureReader(self.n_ctx or None, None).figures(event, "usage")  # nonsense shows as 0
            self.tokens += int(figures.get("prompt_tokens", 0)) + int(figures.get("completion_tokens", 0))
            used = int(figures.get("total_tokens", 0))
            window = f"window {used / self.n_ctx:.0%} ({used:,} of {self.n_ctx:,} tokens)" if self.n_ctx else "window ?"
            sent = f"{self.tokens:,} tokens sent in the run"
            detail = f"step {event.get('step')}: {window}, {sent} ({event.get('finish_reason')}); {self.matrix.text()}"
            self._show(f"{self.label}: {detail}")
        elif kind in ("cut", "clear", "stop"):
            extra = event.get("reason") or event.get("kind") or ""
            self._show(f"{self.label}: {kind} {extra}".rstrip())

    def run_finished(self, row: dict[str, str]) -> None:
        self.matrix.run_done()
        hidden = f"{row.get('hidden_passed') or '?'}/{row.get('hidden_total') or '?'}"
        line = f"{self.label}: {row.get('stop_reason') or '?'}, hidden {hidden}, {row.get('wall_s') or '?'} s"
        line += f"; {self.matrix.text()}"
        if row.get("error"):
            line += f" ({row['error'][:120]})"
        self._show(line, final=True)

    def run_skipped(self, index: int, results_file: str) -> None:
        self.matrix.run_done(skipped=True)
        self._show(f"run {index}/{self.total} already in {results_file}: skipped (--resume)", final=True)

    def summary(self, rows: list[dict[str, str]]) -> None:
        """The table of this bench's runs, after the last one (nothing when none ran)."""
        if rows:
            self.stream.write(summary_table(rows) + "\n")
            self.stream.flush()

    def _show(self, text: str, final: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


SUMMARY_COLUMNS = [
    ("fixture", "fixture"),
    ("preset", "preset"),
    ("ctx", "ctx"),
    ("rep", "rep"),
    ("stop", "stop_reason"),
    ("hidden", ""),
    ("steps", "steps"),
    ("wall s", "wall_s"),
    ("reproc", "prompt_tokens_reprocessed"),
    ("clears", "clearings"),
    ("cuts", "cut_answers"),
    ("gpu MiB", "peak_gpu_mib_flint"),
]


def summary_table(rows: list[dict[str, str]]) -> str:
    """A plain-text table of the runs of this bench, one line per run."""
    header = [title for title, _ in SUMMARY_COLUMNS]
    lines = [header]
    for row in rows:
        hidden = f"{row.get('hidden_passed', '')}/{row.get('hidden_total', '')}"
        lines.append([hidden if not col else (row.get(col) or "-") for _, col in SUMMARY_COLUMNS])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)
