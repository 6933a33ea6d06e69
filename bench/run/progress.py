"""The live progress line during a bench (the summary after it: bench.run.ending).

The line follows the agent's trace as it is written: run i of N, fixture, preset, step, the window's use (this
request's tokens of the window's), the tokens sent in the run so far, and the matrix's elapsed time and ETA (from the
runs finished so far and the time since the last one finished; several workers share one clock, so the ETA counts
their runs side by side). On a terminal the line fits its width; the whole line is in the bench's log.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bench.measure.server_figures import FigureReader
from bench.measure.trace import parse_event
from bench.run.screen import fit, terminal_width
from bench.sandbox.trace_file import read_trace_safely

log = logging.getLogger(__name__)


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
    """The matrix's elapsed time and ETA. The pace is the finished runs' (the matrix's time to the last run that
    finished, per run measured: workers side by side count as one clock); the runs running now are as far along as
    the time since that finish, so the ETA falls as they run and never rises until another run finishes (runs
    skipped by --resume took no time and leave the plan)."""

    def __init__(self, total: int, now: Any = time.monotonic) -> None:
        self.total, self.now = total, now
        self.started = self.last_done = now()
        self.measured = self.skipped = 0
        self.lock = threading.Lock()

    def run_done(self, skipped: bool = False) -> None:
        with self.lock:
            if skipped:
                self.skipped += 1
            else:
                self.measured += 1
                self.last_done = self.now()

    def eta_s(self) -> float | None:
        """Seconds left, None before the first run finished."""
        with self.lock:
            if not self.measured:
                return None
            pace = (self.last_done - self.started) / self.measured
            left = self.total - self.measured - self.skipped
            return max(0.0, pace * left - (self.now() - self.last_done))

    def text(self) -> str:
        """`elapsed 4:10, ETA 12:30`; the ETA only once a run has finished."""
        elapsed, eta = self.now() - self.started, self.eta_s()
        return f"elapsed {clock(elapsed)}, ETA {'after the first run' if eta is None else clock(eta)}"

    def short(self) -> str:
        """`ETA 12:30`, for a line that must fit the terminal."""
        eta = self.eta_s()
        return f"ETA {clock(eta)}" if eta is not None else f"{clock(self.now() - self.started)} in"


def clock(seconds: float) -> str:
    """`0:42`, `12:05`, `2:03:09`."""
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """One status line per run: on a terminal rewritten in place at each step, cut to the terminal's width (its
    whole text in the bench's log); elsewhere one whole line per step."""

    def __init__(self, total: int, stream: TextIO | None = None, matrix: MatrixClock | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.label = self.brief = ""
        self.n_ctx = 0
        self.tokens = 0
        self.matrix = matrix or MatrixClock(total)
        self.lock = threading.Lock()  # a run's end is shown by the grading thread (bench.run.gradings)

    def run_started(self, index: int, fixture: str, preset: str, ctx: int, rep: int) -> None:
        self.label = f"run {index}/{self.total} {fixture} {preset} ctx={ctx} rep={rep}"
        self.brief = f"run {index}/{self.total} {preset} {ctx}"  # for a narrow terminal
        self.n_ctx, self.tokens = ctx, 0
        self._show(f"{self.label}: starting")

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "response":
            figures = FigureReader(self.n_ctx or None, None).figures(event, "usage")  # nonsense shows as 0
            self.tokens += int(figures.get("prompt_tokens", 0)) + int(figures.get("completion_tokens", 0))
            used = int(figures.get("total_tokens", 0))
            share = f"{used / self.n_ctx:.0%}" if self.n_ctx else "?"
            window = f"window {share} ({used:,} of {self.n_ctx:,} tokens)" if self.n_ctx else "window ?"
            sent = f"{self.tokens:,} tokens sent in the run"
            step, eta = f"step {event.get('step')}", self.matrix.short()
            detail = f"{window}, {sent} ({event.get('finish_reason')}); {self.matrix.text()}"
            short = [f"{label}: {step}, window {share}" for label in (self.label, self.brief)]
            forms = [f"{short[0]}, {self.tokens:,} sent; {eta}", *(f"{brief}; {eta}" for brief in short)]
            self._show(f"{self.label}: {step}: {detail}", short=forms)
        elif kind in ("cut", "clear", "stop"):
            extra = event.get("reason") or event.get("kind") or ""
            self._show(f"{self.label}: {kind} {extra}".rstrip())

    def names(self) -> tuple[str, str]:
        """The running run's names: whole, and brief for a narrow terminal."""
        return self.label, self.brief

    def run_finished(self, row: dict[str, str], names: tuple[str, str] | None = None) -> None:
        """The end of the run of `names` (by default the one running now: a grading may end during the next run)."""
        self.matrix.run_done()
        label, brief = names or self.names()
        hidden = f"{row.get('hidden_passed') or '?'}/{row.get('hidden_total') or '?'}"
        outcome = f"{row.get('stop_reason') or '?'}, hidden {hidden}, {row.get('wall_s') or '?'} s"
        line = f"{label}: {outcome}; {self.matrix.text()}"
        short = [line, *(f"{name}: {outcome}; {self.matrix.short()}" for name in (label, brief))]
        if row.get("error"):
            line += f" ({row['error'][:120]})"
        self._show(line, final=True, short=short)

    def run_skipped(self, index: int, results_file: str) -> None:
        self.matrix.run_done(skipped=True)
        self._show(f"run {index}/{self.total} already in {results_file}: skipped (--resume)", final=True)

    def _show(self, text: str, final: bool = False, short: Sequence[str] = ()) -> None:
        """`text` whole, or on a terminal the first of `text` and its `short` forms that fits (bench.run.screen)."""
        log.debug("%s", text)
        with self.lock:
            if self.tty:
                line = fit([text, *short], terminal_width())
                self.stream.write("\r\033[K" + line + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
