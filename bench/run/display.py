"""The live display of a bench with several workers: one status line per worker.

On a terminal the workers' lines form a block redrawn in place, and each finished run is printed above it for good;
elsewhere (a log, CI) every update is one line tagged with its worker.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from bench.run.progress import MatrixClock, Progress
from bench.run.screen import fit, terminal_width

log = logging.getLogger(__name__)


class Display:
    """The status lines of every worker, written by their threads (one at a time)."""

    def __init__(self, labels: list[str], stream: TextIO | None = None) -> None:
        self.labels = labels
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.lines = [f"[{label}] idle" for label in labels]  # each worker's line of the block, as drawn
        self.drawn = 0  # lines of the block on screen now
        self.lock = threading.Lock()
        self.matrix: MatrixClock | None = None  # the workers' shared clock, made by the first of them

    def show(self, worker: int, text: str, final: bool, short: Sequence[str] = ()) -> None:
        """`text` (or on a terminal the first of it and its `short` forms that fits) as `worker`'s line; a final
        line printed above the block for good."""
        tagged = f"[{self.labels[worker]}] {text}"
        with self.lock:
            if not self.tty:
                self.stream.write(tagged + "\n")
            else:
                width = terminal_width()  # every line of the block one row: the move up counts rows
                line = fit([f"[{self.labels[worker]}] {t}" for t in (text, *short)], width)
                if self.drawn:  # back to the block's first line, and clear from there down
                    self.stream.write(f"\033[{self.drawn}F\033[J")
                if final:
                    self.stream.write(line + "\n")
                self.lines[worker] = f"[{self.labels[worker]}] idle" if final else line
                block = [fit([line], width) for line in self.lines]  # the width may have changed since
                self.stream.write("".join(f"{line}\n" for line in block))
                self.drawn = len(block)
            self.stream.flush()


class LaneProgress(Progress):
    """One worker's progress (bench.run.progress.Progress), shown as its line of the shared display."""

    def __init__(self, display: Display, worker: int, total: int) -> None:
        display.matrix = display.matrix or MatrixClock(total)
        super().__init__(total, display.stream, display.matrix)
        self.display = display
        self.worker = worker

    def _show(self, text: str, final: bool = False, short: Sequence[str] = ()) -> None:
        log.debug("%s", text)
        self.display.show(self.worker, text, final, short)
