"""A first start that fetches a model: llama-server's own download bar, read from its log and shown to the user.

llama-server downloads `-hf` models before it opens its HTTP port, so /health does not answer at all meanwhile,
and it draws its bar (`Downloading <file> ─── 42%`) only when its stdout is a terminal. The bench gives it one (a
pseudo-terminal for host processes, `tty: true` in compose.yaml), reads the bar from the log, prints a line now and
then, and keeps waiting as long as the download moves (api.wait_healthy).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TextIO

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BAR = re.compile(r"Downloading (\S+) .*?(\d{1,3})%")
_TAIL_CHARS = 200_000  # the bar redraws up to 1000 times per file; the latest state is near the end
PRINT_STEP = 5  # percent between printed lines


def download_progress(log: str) -> dict[str, int]:
    """File name -> latest percent of every download bar in a log (empty when nothing is being fetched)."""
    latest: dict[str, int] = {}
    for piece in re.split(r"[\r\n]", _ANSI.sub("", log[-_TAIL_CHARS:])):
        found = _BAR.search(piece)
        if found:
            latest[found.group(1)] = int(found.group(2))
    return latest


class DownloadWatch:
    """Called while a server starts: returns its download progress (None when none) and prints it as it moves."""

    def __init__(self, who: str, read_log: Callable[[], str], stream: TextIO | None = None) -> None:
        self.who = who
        self.read_log = read_log
        self.stream = stream or sys.stdout
        self.printed: dict[str, int] = {}

    def __call__(self) -> str | None:
        progress = download_progress(self.read_log())
        for name, percent in progress.items():
            shown = self.printed.get(name)
            if shown is None or percent >= shown + PRINT_STEP or (percent == 100 and shown != 100):
                self.printed[name] = percent
                print(f"{self.who}: downloading {name} {percent:3d}%", file=self.stream, flush=True)
        return " ".join(f"{name}:{percent}" for name, percent in sorted(progress.items())) or None


def either(*watches: Callable[[], str | None]) -> Callable[[], str | None]:
    """One progress callable for several servers starting together."""

    def progress() -> str | None:
        states = [state for watch in watches if (state := watch()) is not None]
        return " ".join(states) or None

    return progress
