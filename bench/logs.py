"""Diagnostics through `logging`: one place that sets where they go and how much of them.

The console (the live line of a bench and its summary, bench.run.progress) and each command's own result (a report,
a table) are not diagnostics and do not go through here. Everything else does, under the `bench` logger: notes and
warnings on stderr (`bench: ...`), at INFO by default, DEBUG with -v, WARNING with -q; and a bench's log file
(logging_to), which gets everything from DEBUG up, with times.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOGGER = logging.getLogger("bench")
LEVELS = {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes (tests and pagers replace it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class _Console(logging.Formatter):
    """`bench: <message>`; a warning says so (`bench: warning: ...`); an error is the CLI's last line, as it is."""

    def format(self, record: logging.LogRecord) -> str:
        level = "warning: " if record.levelno == logging.WARNING else ""
        return f"bench: {level}{record.getMessage()}"


_handlers: list[logging.Handler] = []


def configure_logging(verbosity: int = 0, log_file: Path | None = None) -> None:
    """Console diagnostics at the level `verbosity` asks for (-1 quiet, 0 normal, 1 or more verbose); called again,
    it replaces what it set before. `log_file`: also write every record from DEBUG up there."""
    for handler in _handlers:
        LOGGER.removeHandler(handler)
        handler.close()
    _handlers.clear()
    console = _Stderr()
    console.setLevel(LEVELS[max(-1, min(1, verbosity))])
    console.setFormatter(_Console())
    _add(console)
    if log_file is not None:
        log_to_file(log_file)


def log_to_file(path: Path) -> None:
    """Append every record from DEBUG up to `path`, for the rest of the process."""
    _add(_file_handler(path))


@contextmanager
def logging_to(path: Path) -> Iterator[Path]:
    """Every record from DEBUG up also goes to `path` while the block runs (a bench's log file beside its CSV)."""
    handler = _file_handler(path)
    LOGGER.setLevel(logging.DEBUG)
    LOGGER.addHandler(handler)
    try:
        yield path
    finally:
        LOGGER.removeHandler(handler)
        handler.close()


def _file_handler(path: Path) -> logging.Handler:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    return handler


def _add(handler: logging.Handler) -> None:
    LOGGER.setLevel(logging.DEBUG)  # the handlers choose what they keep
    LOGGER.addHandler(handler)
    _handlers.append(handler)
