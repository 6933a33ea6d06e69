"""Diagnostics through logging: -q/-v choose what reaches stderr, a bench's log file gets everything."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cli import main
from bench.logs import configure_logging, logging_to

log = logging.getLogger("bench.some.module")


@pytest.fixture(autouse=True)
def normal_logging() -> Iterator[None]:
    yield
    configure_logging(0)  # what the next test expects of the bench logger


def say_everything() -> None:
    log.debug("a detail")
    log.info("a note")
    log.warning("a problem")


@pytest.mark.parametrize(
    ("verbosity", "shown"),
    [
        (-1, ["bench: warning: a problem"]),
        (0, ["bench: a note", "bench: warning: a problem"]),
        (2, ["bench: a detail", "bench: a note", "bench: warning: a problem"]),
    ],
)
def test_verbosity_chooses_what_reaches_stderr(
    verbosity: int, shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(verbosity)
    say_everything()
    out, err = capsys.readouterr()
    assert err.splitlines() == shown and out == ""


def test_a_log_file_gets_every_record_with_its_time_and_only_while_it_is_open(tmp_path: Path) -> None:
    configure_logging(-1)
    path = tmp_path / "results.csv.log"
    with logging_to(path):
        say_everything()
    log.info("after the bench")
    lines = path.read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "DEBUG bench.some.module: a detail",
        "INFO bench.some.module: a note",
        "WARNING bench.some.module: a problem",
    ]
    assert lines[0][:2] == "20"  # the date first


def test_the_cli_takes_q_and_v_and_an_error_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", "compare", "missing-a.csv", "missing-b.csv"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("bench: cannot read results file missing-a.csv")
    assert main(["-vv", "report", "missing.csv"]) == 2
