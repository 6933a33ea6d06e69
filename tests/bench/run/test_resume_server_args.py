"""--resume and the llama-server flags of the user's own: a run measured with the same flags is skipped, and a file of
runs made with other flags (none included) is refused in one line, never filled with runs of another setup. The
scripted llama-server as an external server: its flags are recorded, as for a Kubernetes pod's sidecars."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_flint_bench import fake_flint_config
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ResultsError
from bench.results.append import read_rows
from bench.run.runner import Bench
from bench.testing import fake_llama

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")


def config(tmp_path: Path, flint: fake_llama.FakeLlama, flags: list[str], **changes: object) -> BenchConfig:
    """Runs of the suite's small task (tests/small_task.py): these tests read the flags and the resume, not the
    grading."""
    return fake_flint_config(tmp_path, flint, max_steps=2, flint_server_args=flags, **(SETTINGS | changes))


def test_resume_skips_runs_of_the_same_flags_and_refuses_a_file_of_other_flags(tmp_path: Path) -> None:
    own = ["-fa", "on", "--chat-template-kwargs", '{"a": "b c"}']
    with fake_llama.FakeLlama() as flint:
        (first,) = Bench(config(tmp_path, flint, own), checkout=ROOT).run()
        assert first["flint_server_args"] == '-fa on --chat-template-kwargs \'{"a": "b c"}\''
        served = len(flint.requests)
        assert Bench(config(tmp_path, flint, list(own), resume=True), checkout=ROOT).run() == []
        assert len(flint.requests) == served  # the same flags: measured already, nothing ran again
        more = Bench(config(tmp_path, flint, list(own), resume=True, reps=2), checkout=ROOT).run()
        assert [row["rep"] for row in more] == ["2"]
        for other, shown in ((["-fa", "off"], "-fa off"), ([], "empty")):
            with pytest.raises(ResultsError, match=f"different flint_server_args .* vs {shown}, this bench's"):
                Bench(config(tmp_path, flint, other, resume=True, reps=2), checkout=ROOT).run()
    assert [row["flint_server_args"] for row in read_rows(tmp_path / "results.csv")] == [first["flint_server_args"]] * 2
