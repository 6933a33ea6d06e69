"""Failure labels: why a run went wrong, read from its event trace and the run's outcome.

The names follow the failure categories the article borrows (execution misrepresentation, unbounded or idle
execution) plus the plain stop causes. Each label and the evidence that triggers it:

    execution_misrepresentation  the run stopped with `done` although the repo is untouched (files_changed 0)
                                 or a hidden test fails: the "done" does not describe what happened
    idle_execution               the same file was read IDLE_READS or more times (read_file, or `cat` in run),
                                 or the step limit was reached without any file changed
    cut_answers                  at least one answer was cut off (a `cut` event)
    context_exhausted            the run stopped because nothing was left to clear
    server_error                 the run stopped on a server error
    infrastructure               the bench failed the run (stop_reason infra_error), or the trace has no
                                 `stop` line (the agent process was killed)
    grading_tampered             the grading was interfered with (a canary test gave the wrong outcome, the test
                                 report disagrees with what pytest said or with the sealed judge, or a session gave
                                 no whole report): the tests it cannot vouch for count as failed
    resource_exhausted           the run used up a limit of its sandbox: memory (a process was killed for it), the
                                 repository's size, or the size of the trace; the agent's failure, not the bench's

The runner writes ";".join(failure_labels(...)) into the row's `failure_labels` column.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections import Counter
from dataclasses import dataclass

from bench.measure.trace import Event, stop_event
from bench.results.schema import INFRA_STOP_REASON, RESOURCE_STOP_REASON

# Reading one file this often means the run is going round in circles (the article's C2 read two files 9 times).
IDLE_READS = 3
WRITE_TOOLS = {"write_file", "edit_file"}


@dataclass(frozen=True)
class Outcome:
    """How a run ended, as far as the labels need it; None where it was not measured."""

    stop_reason: str | None = None  # None: take the trace's
    files_changed: int | None = None
    hidden_passed: int | None = None
    hidden_total: int | None = None
    grading_tampered: bool = False
    resource_exhausted: bool = False  # a sandbox limit was reached, whether or not the run stopped for it


def failure_labels(events: list[Event], outcome: Outcome) -> list[str]:
    """The labels that apply to one run, in the order of the module docstring."""
    stop = stop_event(events)
    reason = outcome.stop_reason or (str(stop.get("reason")) if stop else "")
    checks = [
        ("execution_misrepresentation", reason == "done" and _claims_more_than_done(outcome)),
        (
            "idle_execution",
            _rereads(events) >= IDLE_READS or (reason == "step_limit" and not _changed_files(events, outcome)),
        ),
        ("cut_answers", any(event.get("event") == "cut" for event in events)),
        ("context_exhausted", reason == "context_exhausted"),
        ("server_error", reason == "server_error"),
        ("infrastructure", reason == INFRA_STOP_REASON or (stop is None and reason != RESOURCE_STOP_REASON)),
        ("grading_tampered", outcome.grading_tampered),
        ("resource_exhausted", outcome.resource_exhausted or reason == RESOURCE_STOP_REASON),
    ]
    return [label for label, applies in checks if applies]


def read_paths(event: Event) -> list[str]:
    """The files a tool event read: read_file's path, or the operands of `cat` in a run command."""
    args = event.get("args")
    if not isinstance(args, dict):
        return []
    if event.get("name") == "read_file" and isinstance(args.get("path"), str):
        return [_normalise(args["path"])]
    if event.get("name") == "run" and isinstance(args.get("command"), str):
        return [_normalise(path) for path in _cat_operands(args["command"])]
    return []


def _claims_more_than_done(outcome: Outcome) -> bool:
    """True when the repo is untouched or a hidden test fails; unmeasured values prove nothing."""
    passed, total = outcome.hidden_passed, outcome.hidden_total
    return outcome.files_changed == 0 or (passed is not None and total is not None and passed < total)


def _rereads(events: list[Event]) -> int:
    """How many times the most-read file was read (refused commands read nothing)."""
    reads = Counter(
        path
        for event in events
        if event.get("event") == "tool" and not event.get("refused")
        for path in read_paths(event)
    )
    return max(reads.values(), default=0)


def _changed_files(events: list[Event], outcome: Outcome) -> bool:
    """The graded files_changed when measured; otherwise whether any write or edit succeeded in the trace."""
    if outcome.files_changed is not None:
        return outcome.files_changed > 0
    return any(
        event.get("event") == "tool" and str(event.get("name")) in WRITE_TOOLS and event.get("ok") for event in events
    )


def _cat_operands(command: str) -> list[str]:
    """The files `cat` reads in a shell command line (split roughly at ;, &&, || and |, which is enough for cat)."""
    operands: list[str] = []
    for segment in re.split(r"&&|\|\||[;|\n]", command):
        try:
            words = shlex.split(segment)
        except ValueError:  # unbalanced quotes: the shell would have refused it too, but the words still tell
            words = segment.split()
        if words and posixpath.basename(words[0]) == "cat":
            operands.extend(_file_words(words[1:]))
    return operands


def _file_words(words: list[str]) -> list[str]:
    """File operands: not options, not output redirections or here-documents (`cat > f <<EOF` writes f)."""
    files: list[str] = []
    skip_next = False
    for word in words:
        operator = word.lstrip("0123456789&")
        if skip_next:
            skip_next = False
        elif operator in ("<", ""):
            continue  # `cat < f` reads f: the next word is an operand like any other
        elif operator.startswith((">", "<<")):
            skip_next = operator in (">", ">>", "<<", "<<<", ">|")
        elif not word.startswith("-"):
            files.append(word.removeprefix("<"))
    return files


def _normalise(path: str) -> str:
    """`./todo.py` and `todo.py` are the same file."""
    return posixpath.normpath(path.strip())
