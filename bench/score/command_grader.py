"""Where a language's test command runs for grading: in its sandbox image, locked down as the pytest grader is (no
network, non-root, read-only root, no capabilities, limits; bench/score/graders.py), or on this machine (local).

The folder given is the grading copy with the hidden tests already in it: the agent has ended by then, and it never
saw them. bench/score/command_runner.py copies it to a tmpfs, runs the command and reports its streams apart.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.containers.engine import run_container
from bench.containers.language_images import ensure_language_image
from bench.languages.base import Language
from bench.processes import run_to_end
from bench.score.graders import REPORT_LIMIT, DockerGrader, Grader, GraderLimits, locked_down

RUNNER_SOURCE = Path(__file__).with_name("command_runner.py").read_text()


@dataclass(frozen=True)
class CommandRun:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    problem: str | None = None  # why no report came back
    report_file: str | None = None  # the runner's report file ("" when it wrote none); None: it reports on stdout

    @property
    def report(self) -> str:
        """What the runner reported: its report file where it writes one, else its stdout."""
        return self.stdout if self.report_file is None else self.report_file


class CommandGrader(Protocol):
    def run(self, lang: Language, copy: Path, timeout_s: float) -> CommandRun: ...


def _spec(lang: Language, source: str, work: str, home: str, timeout_s: float) -> dict[str, Any]:
    return {
        "marker": f"bench-command-report-{secrets.token_hex(8)}",
        "source": source,
        "work": work,
        "home": home,
        "command": lang.grade_command,
        "environment": lang.grade_environment,
        "timeout_s": timeout_s,
        "report_file": lang.report_file,
    }


def read_run(output: str, marker: str, timed_out: bool) -> CommandRun:
    _, marked, report = output.rpartition(f"\n{marker}\n")
    try:
        data = json.loads(report) if marked else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        why = output.strip()[-600:] or "no output"
        return CommandRun(None, "", "", timed_out, problem=f"the grading runner gave no report: {why}")
    return CommandRun(
        exit_code=data.get("exit_code"),
        stdout=str(data.get("stdout", "")),
        stderr=str(data.get("stderr", "")),
        timed_out=timed_out or bool(data.get("timed_out")),
        report_file=None if data.get("report") is None else str(data["report"]),
    )


class DockerCommandGrader:
    def __init__(self, client: Any, sandbox: str, labels: dict[str, str], limits: GraderLimits) -> None:
        self.client, self.sandbox, self.labels, self.limits = client, sandbox, labels, limits

    def run(self, lang: Language, copy: Path, timeout_s: float) -> CommandRun:
        image = ensure_language_image(self.client, lang, self.sandbox)
        spec = _spec(lang, "/src", "/grade/repo", "/tmp", timeout_s=timeout_s)
        _, timed_out, logs = run_container(
            self.client,
            timeout_s + 60,
            REPORT_LIMIT,
            image=image,
            command=["python3", "-I", "-B", "-c", RUNNER_SOURCE],
            environment={"BENCH_COMMAND_SPEC": json.dumps(spec)},
            **locked_down(copy, self.limits, self.labels, exec_tmp=True),  # compilers run what they build
        )
        return read_run(logs, spec["marker"], timed_out)


class LocalCommandGrader:
    """The test command on this machine, with its own toolchain: no confinement at all (the code is trusted)."""

    def run(self, lang: Language, copy: Path, timeout_s: float) -> CommandRun:
        scratch = Path(tempfile.mkdtemp(prefix="bench-command-"))
        try:
            spec = _spec(lang, str(copy), str(scratch / "repo"), str(scratch), timeout_s=timeout_s)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BENCH_"))}
            env["BENCH_COMMAND_SPEC"] = json.dumps(spec)
            _, timed_out, output = run_to_end(
                [sys.executable, "-I", "-B", "-c", RUNNER_SOURCE],
                cwd=scratch,
                env=env,
                timeout_s=timeout_s + 60,
                output_limit=REPORT_LIMIT,
            )
            return read_run(output, spec["marker"], timed_out)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def command_grader(grader: Grader) -> CommandGrader:
    """The command grader as strong as the pytest grader given: in the same engine with its labels, or local."""
    if isinstance(grader, DockerGrader):
        return DockerCommandGrader(grader.client, grader.image, grader.labels, grader.limits)
    return LocalCommandGrader()
