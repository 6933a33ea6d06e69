"""The trace is read only as what it should be: every trap a sandbox could leave in its place ends in a one-line
reason, at once, without the trap's content."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.sandbox.trace_file import read_trace_safely
from bench.untrusted import read_untrusted

TRACE = '{"t": 0.1, "event": "start"}\n{"t": 0.2, "event": "stop", "reason": "done", "steps": 1}\n'


@pytest.fixture(autouse=True)
def never_hang() -> Iterator[None]:
    """A read that blocks (the FIFO attack) fails the test instead of hanging the suite."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the read blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file only its owner may read, like /etc/shadow on the host."""
    path = tmp_path / "secret"
    path.write_text("root:$6$not-for-the-results$:19000:0:99999:7:::\n")
    path.chmod(0o600)
    return path


def test_a_regular_trace_is_read(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text(TRACE)

    assert read_trace_safely(tmp_path / "events.jsonl", owner_uid=os.geteuid()) == (TRACE, None)


def test_a_symlink_to_a_secret_is_not_followed(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "events.jsonl").symlink_to(secret)

    text, problem = read_trace_safely(tmp_path / "events.jsonl")

    assert text is None and problem is not None and "symbolic link" in problem and "not-for" not in problem


def test_a_hard_link_to_a_secret_is_not_read(tmp_path: Path, secret: Path) -> None:
    os.link(secret, tmp_path / "events.jsonl")

    text, problem = read_trace_safely(tmp_path / "events.jsonl", owner_uid=secret.stat().st_uid)

    assert text is None and problem is not None and "2 hard links" in problem


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "events.jsonl")

    text, problem = read_trace_safely(tmp_path / "events.jsonl")

    assert text is None and problem is not None and "a FIFO" in problem


@pytest.mark.parametrize("link", [False, True], ids=["the device", "a link to it"])
def test_dev_zero_is_refused(tmp_path: Path, link: bool) -> None:
    path = Path("/dev/zero")
    if link:
        path = tmp_path / "events.jsonl"
        path.symlink_to("/dev/zero")

    text, problem = read_trace_safely(path)

    assert text is None and problem is not None and ("a device" in problem or "symbolic link" in problem)


def test_an_oversize_trace_is_refused_without_reading_it(tmp_path: Path) -> None:
    with (tmp_path / "events.jsonl").open("wb") as f:
        f.truncate(5 * 1024 * 1024)  # sparse: 5 MiB that take no disk

    text, problem = read_trace_safely(tmp_path / "events.jsonl", max_bytes=1024 * 1024)

    assert text is None and problem is not None and "5242880 bytes, more than the 1048576 allowed" in problem


def test_a_trace_the_agent_did_not_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text(TRACE)

    text, problem = read_trace_safely(tmp_path / "events.jsonl", owner_uid=os.geteuid() + 1)

    assert text is None and problem is not None and f"belongs to uid {os.geteuid()}" in problem


def test_a_missing_trace_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    assert read_trace_safely(tmp_path / "events.jsonl") == (
        None,
        f"the event trace was not read: {tmp_path / 'events.jsonl'} does not exist",
    )


def test_a_folder_on_the_way_that_became_a_symlink_is_not_followed(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / ".bench-grading").symlink_to(secret.parent)

    text, problem = read_untrusted(tmp_path / "copy" / ".bench-grading" / "secret", 1000, trusted=tmp_path / "copy")

    assert text is None and problem is not None and "symbolic link" in problem


def test_a_trace_the_agent_let_grow_past_the_cap_is_its_own_limit_not_a_damaged_trace(tmp_path: Path) -> None:
    """Over the cap as a whole, or in one event, the trace is the agent's doing (it wrote it): the run reached a
    limit (resource_exhausted); a trace that is not JSON is damaged (the bench cannot trust the run)."""
    from bench.measure.trace import EVENT_LIMIT
    from bench.run.observe import keep_trace

    out, run = tmp_path / "out", tmp_path / "run"
    out.mkdir(), run.mkdir()
    (out / "events.jsonl").write_text(TRACE * 100)
    events, problem, limit = keep_trace(out, run, None, limit=1000)
    assert (events, problem) == ([], None) and limit is not None and "grew past the bench's cap" in limit

    (out / "events.jsonl").write_text('{"event": "x", "planted": "' + "y" * EVENT_LIMIT + '"}\n' + TRACE)
    events, problem, limit = keep_trace(out, run, None)
    assert (events, problem) == ([], None) and limit is not None and "an event past the bench's cap" in limit

    (out / "events.jsonl").write_text("not json\n" + TRACE)
    events, problem, limit = keep_trace(out, run, None)
    assert limit is None and problem is not None and "damaged" in problem
