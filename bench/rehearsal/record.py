"""Where the rehearsal's figures go, as they are measured: one JSON line each in OUT/figures.jsonl, flushed and synced
at once, so a command killed at its limit (or a machine taken back) keeps every figure it took; a line per step when
the step ends (its seconds, and whether it finished, failed or ran past its deadline); at the end, the table
(rehearsal.txt) and every figure in one file (rehearsal.json)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from bench.rehearsal.steps import Figure, text

FIGURES = "figures.jsonl"


class Recorder:
    """Figures as they come (emit), into `out`; `echo` prints each as a line of the table too."""

    def __init__(self, out: Path, echo: bool = True) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.echo = echo
        self.figures: list[Figure] = []
        self.started = time.monotonic()
        self._file: TextIO = open(out / FIGURES, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole rehearsal

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def emit(self, figure: Figure) -> None:
        self.figures.append(figure)
        self._line({"t": round(self.seconds(), 2), **asdict(figure)})
        if self.echo:
            print(row_text(figure), flush=True)

    def step(self, name: str, seconds: float, status: str, detail: str = "") -> None:
        self._line(
            {
                "t": round(self.seconds(), 2),
                "step_done": name,
                "seconds": round(seconds, 2),
                "status": status,
                "detail": detail,
            }
        )

    def _line(self, entry: dict[str, Any]) -> None:
        self._file.write(json.dumps(entry, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """The table and the whole list, beside the lines."""
        (self.out / "rehearsal.txt").write_text(table(self.figures) + "\n")
        (self.out / "rehearsal.json").write_text(
            json.dumps([asdict(f) for f in self.figures], indent=1, default=str) + "\n"
        )
        self._file.close()


def row_text(figure: Figure) -> str:
    value = text(figure.value) if figure.value is not None else "-"
    return "  ".join([figure.step, figure.name, value, figure.status, figure.detail]).rstrip()


def table(figures: list[Figure]) -> str:
    rows = [("step", "figure", "value", "result", "detail")]
    rows += [(f.step, f.name, text(f.value) if f.value is not None else "-", f.status, f.detail) for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join([*(r[i].ljust(widths[i]) for i in range(4)), r[4]]).rstrip() for r in rows)


def write(figures: list[Figure], out: Path) -> None:
    """rehearsal.txt and rehearsal.json for figures gathered elsewhere (a test's)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "rehearsal.txt").write_text(table(figures) + "\n")
    (out / "rehearsal.json").write_text(json.dumps([asdict(f) for f in figures], indent=1, default=str) + "\n")
