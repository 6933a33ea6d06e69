""".github/workflows/nightly.yml run as GitHub runs it: the workflow's own run: blocks, each written to a file and
run with the shell GitHub would use for it (`shell: bash` is `bash --noprofile --norc -eo pipefail {0}`; no shell
at all is `bash -e {0}`), in order, with `if: always()` honoured, $GITHUB_ENV carried from step to step, in a temp
checkout. The artifact actions are played by their documented rules: upload-artifact roots an artifact at the least
common ancestor of its search paths (a single path: that path), and dawidd6/action-download-artifact with a `name`
unpacks it into `path`. Only the GPU is stubbed: a `make` on PATH that copies a prepared results CSV to OUT=, and a
`docker` that answers `docker info` with a recorded runner's (tests/host_matrix/data: with the NVIDIA Container
Toolkit or without).

Nights come from experiments/synthetic_nights.py: part3 gets 30% slower on night 12, nothing changes before.
Expressions (`if:`, `${{ }}` in env and inputs) are evaluated for the contexts a night has: github (ref_name, the
default branch), inputs (a manual run's) and vars (the repository's variables).
"""

from __future__ import annotations

import contextlib
import csv
import http.server
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
SHELLS = {"bash": "bash --noprofile --norc -eo pipefail {0}", "sh": "sh -e {0}", None: "bash -e {0}"}
# `make bench ... OUT=FILE` without a GPU: the night's CSV is copied to FILE. `make gpu-check` (the GPU self-check
# that runs first) passes. Every make command line is logged to $MAKE_LOG.
# With RESUME=1 the rows of $REDO_SOURCE (the runs measured again) are appended to OUT instead.
MAKE_STUB = """#!/bin/sh
echo "$@" >> "$MAKE_LOG"
[ "$1" = gpu-check ] && exit 0
[ "$1" = bench ] || exit 2
out=""; resume=""
for arg; do case "$arg" in OUT=*) out="${arg#OUT=}";; RESUME=1) resume=1;; esac; done
[ -n "$out" ] || exit 0
mkdir -p "$(dirname "$out")"
if [ -n "$resume" ]; then tail -n +2 "$REDO_SOURCE" >> "$out"; else cp "$NIGHT_SOURCE" "$out"; fi
"""
Artifact = dict[str, bytes]  # path inside the artifact -> content
RECORDS = ROOT / "tests" / "host_matrix" / "data"


def docker_stub(record: str) -> str:
    """`docker info --format '{{json .}}'` as the recorded runner answers it."""
    info = next(line for line in (RECORDS / record).read_text().splitlines() if line.startswith("{"))
    return f"#!/bin/sh\n[ \"$1\" = info ] || exit 1\ncat <<'EOF'\n{info}\nEOF\n"


pytestmark = pytest.mark.slow


@dataclass
class Job:
    ok: bool
    logs: dict[str, str] = field(default_factory=dict)  # step name -> what its script printed
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    makes: list[str] = field(default_factory=list)  # the make command lines, in order
    downloads: list[dict[str, str]] = field(default_factory=list)  # the download step's inputs, evaluated


_TOKEN = re.compile(r"'[^']*'|&&|\|\||==|!=|[\w.-]+\(\)|[\w.-]+")


def evaluate(expression: str, context: dict[str, Any], ok: bool) -> Any:
    """A GitHub expression of literals, context paths, always()/success(), ==, !=, && and ||."""
    tokens = _TOKEN.findall(expression)

    def atom(token: str) -> Any:
        if token.startswith("'"):
            return token[1:-1]
        if token in ("always()", "success()", "failure()"):
            return {"always()": True, "success()": ok, "failure()": not ok}[token]
        value: Any = context
        for part in token.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return value

    def compare(part: list[str]) -> Any:
        if len(part) == 3:
            return (atom(part[0]) == atom(part[2])) == (part[1] == "==")
        return atom(part[0])

    def split(items: list[str], operator: str) -> list[list[str]]:
        groups: list[list[str]] = [[]]
        for item in items:
            groups.append([]) if item == operator else groups[-1].append(item)
        return groups

    value: Any = ""
    for alternative in split(tokens, "||"):
        value = all(compare(p) for p in split(alternative, "&&")) if "&&" in alternative else compare(alternative)
        if value:
            return value
    return value


def substitute(text: str, context: dict[str, Any], ok: bool = True) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), context, ok)), text)


def upload(workspace: Path, paths: str) -> Artifact:
    """upload-artifact v4: the files its `path:` lines match, named relative to the artifact's root."""
    patterns = [line.strip() for line in paths.splitlines() if line.strip() and not line.strip().startswith("!")]
    searches, files = [], []
    for pattern in patterns:
        literal = []
        for part in Path(pattern).parts:
            if any(ch in part for ch in "*?["):
                break
            literal.append(part)
        searches.append(workspace.joinpath(*literal))
        for match in sorted(workspace.glob(pattern.rstrip("/"))):
            files += sorted(p for p in match.rglob("*") if p.is_file()) if match.is_dir() else [match]
    searches = list(dict.fromkeys(searches))
    if len(searches) > 1:
        root = Path(os.path.commonpath(searches))
    elif len(files) == 1 and files[0] == searches[0]:
        root = files[0].parent  # a single file named without a wildcard: stored without its folders
    else:
        root = searches[0]
    return {str(path.relative_to(root)): path.read_bytes() for path in files}


def download(workspace: Path, artifact: Artifact, path: str) -> None:
    """dawidd6/action-download-artifact with `name:` (not a regex): the artifact's files unpacked into `path`."""
    for name, content in artifact.items():
        target = workspace / path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def checkout(tmp: Path) -> Path:
    workspace = tmp / "workspace"
    shutil.copytree(ROOT / "bench", workspace / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / ".ci", workspace / ".ci", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(WORKFLOW, workspace / "nightly.yml")
    python = workspace / ".venv" / "bin" / "python"  # what `make bench` leaves behind: a venv with the bench
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return workspace


def run_job(
    tmp: Path,
    night: Path,
    previous: Artifact | None,
    run_id: int = 1,
    *,
    branch: str = "main",
    inputs: dict[str, str] | None = None,
    variables: dict[str, str] | None = None,
    successful_runs: int | None = 0,
    docker: str = "docker-info-plain.txt",
    redo: Path | None = None,
) -> Job:
    """One night of the workflow: `night` is what the bench measures, `previous` the bench-history artifact of the
    default branch (main); a manual run has `inputs`, the repository `variables`. GitHub's API answers that the
    workflow has `successful_runs` successful runs (None: it does not answer); `docker info` answers as `docker`; a
    bench resumed (RESUME=1) measures the rows of `redo`."""
    with github_api(successful_runs) as api:
        return _run_job(tmp, night, previous, run_id, branch, inputs or {}, variables or {}, api, docker, redo)


@contextlib.contextmanager
def github_api(successful_runs: int | None) -> Iterator[str]:
    """GitHub's REST API as far as the nightly asks it (the runs of nightly.yml), on 127.0.0.1."""

    class Runs(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            wanted = "/repos/owner/repo/actions/workflows/nightly.yml/runs?status=success&branch=main&per_page=1"
            ok = successful_runs is not None and self.path == wanted
            body = json.dumps({"total_count": successful_runs} if ok else {"message": "no"}).encode()
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Runs)
    # shutdown() waits for serve_forever to poll: at its default 0.5 s, each night would wait out half a second
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _run_job(
    tmp: Path,
    night: Path,
    previous: Artifact | None,
    run_id: int,
    branch: str,
    inputs: dict[str, str],
    variables: dict[str, str],
    api: str,
    docker: str,
    redo: Path | None,
) -> Job:
    context = {
        "github": {"ref_name": branch, "event": {"repository": {"default_branch": "main"}}, "token": "t0ken"},
        "inputs": inputs,
        "vars": variables,
    }
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job_spec = workflow["jobs"]["bench"]
    workspace, bin_dir, temp = checkout(tmp), tmp / "bin", tmp / "runner-temp"
    bin_dir.mkdir()
    temp.mkdir()
    (bin_dir / "make").write_text(MAKE_STUB)
    (bin_dir / "docker").write_text(docker_stub(docker))
    for stub in ("make", "docker"):
        (bin_dir / stub).chmod(0o755)
    github_env = temp / "github_env"
    github_env.touch()
    make_log = tmp / "make.log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp), "CI": "true", "NIGHT_SOURCE": str(night)}
    env["REDO_SOURCE"] = str(redo or night)
    env["MAKE_LOG"] = str(make_log)
    env |= {
        "GITHUB_SHA": "0123456789abcdef",
        "GITHUB_RUN_ID": str(run_id),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ENV": str(github_env),
        "GITHUB_API_URL": api,
        "GITHUB_REPOSITORY": "owner/repo",
        "RUNNER_TEMP": str(temp),
    }
    env |= {k: substitute(str(v), context) for k, v in job_spec.get("env", {}).items()}
    default_shell = job_spec.get("defaults", {}).get("run", {}).get("shell")
    job = Job(ok=True)
    for index, step in enumerate(job_spec["steps"]):
        condition = str(step.get("if", "success()"))
        if not evaluate(condition.removeprefix("${{").removesuffix("}}"), context, job.ok):
            continue
        uses: str = step.get("uses", "")
        given = {k: substitute(str(v), context) for k, v in step.get("with", {}).items()}
        if uses.startswith("dawidd6/action-download-artifact"):
            job.downloads.append(given)
            if previous is not None:
                download(workspace, previous, given["path"])
        elif uses.startswith("actions/upload-artifact"):
            job.artifacts[given["name"]] = upload(workspace, given["path"])
        elif "run" in step:
            script = temp / f"step-{index}.sh"
            script.write_text(step["run"])
            command = SHELLS[step.get("shell", default_shell)].format(script).split()
            step_env = env | dict(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
            result = subprocess.run(command, cwd=workspace, env=step_env, capture_output=True, text=True, timeout=300)
            job.logs[step["name"]] = result.stdout + result.stderr
            job.ok = job.ok and result.returncode == 0
    job.makes = make_log.read_text().splitlines() if make_log.exists() else []
    return job


def synthetic_nights(tmp: Path, count: int) -> list[Path]:
    path = ROOT / "experiments" / "synthetic_nights.py"
    spec = importlib.util.spec_from_file_location("synthetic_nights", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    paths: list[Path] = module.write_nights(tmp / "nights", count, seed=7)
    return paths


def history_artifact(tmp: Path, nights: list[Path]) -> Artifact:
    """A bench-history artifact as an earlier night uploaded it: history/nightly-*.csv through the upload rules."""
    folder = tmp / "earlier" / "history"
    folder.mkdir(parents=True)
    for night in nights:
        shutil.copy(night, folder)
    return upload(tmp / "earlier", "history/nightly-*.csv")


def test_a_first_night_passes_and_the_next_night_finds_its_csv_where_it_looks(tmp_path: Path) -> None:
    first, second = synthetic_nights(tmp_path, 2)
    night_1 = run_job(tmp_path / "night-1", first, previous=None)
    assert night_1.ok, night_1.logs
    assert "First night: no successful nightly run exists yet" in night_1.logs["Compare with earlier nights"]
    history = night_1.artifacts["bench-history"]
    assert [name.startswith("nightly-") and "/" not in name for name in history] == [True]  # at the artifact's root
    kept = night_1.artifacts["bench-night"]
    assert "compare.md" in kept and any(name.startswith("history-report/") for name in kept)

    night_2 = run_job(tmp_path / "night-2", second, previous=history, run_id=2)  # the same commit, the same day
    assert night_2.ok, night_2.logs
    assert "Baseline: 3 runs from 1 files" in night_2.logs["Compare with earlier nights"]
    assert len(night_2.artifacts["bench-history"]) == 2


def test_a_night_without_change_passes(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    job = run_job(tmp_path / "run", nights[11], previous=history_artifact(tmp_path, nights[4:11]))
    log = job.logs["Compare with earlier nights"]
    assert job.ok, log
    assert "Baseline: 21 runs from 7 files" in log and "FAIL" not in log


def test_a_regression_fails_the_job(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 13)  # night 12: part3 30% slower
    job = run_job(tmp_path / "run", nights[12], previous=history_artifact(tmp_path, nights[5:12]))
    log = job.logs["Compare with earlier nights"]
    assert not job.ok, log
    assert "FAIL  wall_s worse by more than 25% at p ≤ 0.05 in part3" in log
    assert len(job.artifacts["bench-history"]) == 8  # kept all the same, for people; the next night skips this run


def test_the_old_layout_stored_the_csv_where_the_next_night_never_looked(tmp_path: Path) -> None:
    """The simulated upload reproduces the bug of issue 10: compare.md beside results/ moved the root up."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "nightly-1.csv").write_text("x")
    (tmp_path / "compare.md").write_text("x")
    assert sorted(upload(tmp_path, "results/nightly-*.csv\ncompare.md")) == ["compare.md", "results/nightly-1.csv"]


def with_flint(night: Path, out: Path, peak: Callable[[str], str], method: str | None = None) -> Path:
    """The night's CSV with Flint's peak rewritten (and the GPU method, when given)."""
    with open(night, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["peak_gpu_mib_flint"] = peak(row["peak_gpu_mib_flint"])
        if method is not None:
            row["gpu_mem_method"] = method
    return write_rows(rows, out)


def rewritten(night: Path, out: Path, change: Callable[[dict[str, str]], dict[str, str]]) -> Path:
    """The night's CSV with each row changed by `change`."""
    with open(night, newline="") as f:
        return write_rows([change(row) for row in csv.DictReader(f)], out)


def write_rows(rows: list[dict[str, str]], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def test_the_workflow_reads_no_more_than_it_needs_and_asks_for_the_gpu_build() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read", "actions": "read"}
    trigger = workflow[True]  # YAML 1.1 reads the key `on` as true
    build = trigger["workflow_dispatch"]["inputs"]["gpu_build"]
    assert build["options"] == ["auto", "cuda", "cpu"] and build["default"] == "auto"


@pytest.mark.parametrize(
    ("inputs", "variables", "build"),
    [({}, {}, "auto"), ({"gpu_build": "cpu"}, {"GPU_BUILD": "cuda"}, "cpu"), ({}, {"GPU_BUILD": "cpu"}, "cpu")],
)
def test_the_gpu_build_comes_from_the_manual_input_else_the_variable_else_auto(
    inputs: dict[str, str], variables: dict[str, str], build: str
) -> None:
    value = yaml.safe_load(WORKFLOW.read_text())["jobs"]["bench"]["env"]["GPU_BUILD"]
    assert substitute(value, {"inputs": inputs, "vars": variables}) == build


def test_a_night_whose_flint_peak_grew_fails(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    grown = with_flint(nights[11], tmp_path / "grown" / nights[11].name, lambda mib: str(int(int(mib) * 1.08)))
    job = run_job(tmp_path / "run", grown, previous=history_artifact(tmp_path, nights[4:11]))
    log = job.logs["Compare with earlier nights"]
    assert not job.ok, log
    assert "FAIL  peak_gpu_mib_flint worse by more than 5% at p ≤ 0.05" in log


def test_a_night_whose_gpu_reading_became_unavailable_fails(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    method = "unavailable: no NVIDIA driver (Driver Not Loaded)"
    blind = with_flint(nights[11], tmp_path / "blind" / nights[11].name, lambda mib: "", method)
    job = run_job(tmp_path / "run", blind, previous=history_artifact(tmp_path, nights[4:11]))
    assert not job.ok
    assert f"no GPU reading for Flint ({method})" in job.logs["Bench"]
    assert "Compare with earlier nights" not in job.logs  # failed at the bench step: nothing is compared


def test_a_manual_run_of_another_branch_passes_its_build_to_every_make_and_never_becomes_a_baseline(
    tmp_path: Path,
) -> None:
    (night,) = synthetic_nights(tmp_path, 1)
    job = run_job(tmp_path / "run", night, previous=None, branch="try-a-flag", inputs={"gpu_build": "cpu"})
    assert job.ok, job.logs
    assert [line.split()[:2] for line in job.makes] == [["gpu-check", "GPU=cpu"], ["bench", "GPU=cpu"]]
    assert "bench-history" not in job.artifacts and "bench-night" in job.artifacts  # its results, for people
    assert [d["branch"] for d in job.downloads] == ["main"]  # and its baseline is the default branch's


# A night that cannot pass blind (issue 23): each way a baseline can be missing, and the declared ways out.

COMPARE = "Compare with earlier nights"


def renamed(night: Path, out: Path) -> Path:
    """The night's CSV with another Flint model: a configuration no earlier night ran."""
    with open(night, newline="") as f:
        rows = list(csv.DictReader(f))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**row, "flint_model": "Qwen3-32B-Q4_K_M.gguf"} for row in rows)
    return out


def test_a_missing_history_fails_the_night_saying_what_to_do(tmp_path: Path) -> None:
    (night,) = synthetic_nights(tmp_path, 1)
    expired = run_job(tmp_path / "expired", night, previous=None, successful_runs=12)
    assert not expired.ok
    assert "though 12 successful nightly runs exist: their bench-history artifact expired" in expired.logs[COMPARE]
    assert "first_night=true" in expired.logs[COMPARE]


def nightly_baseline() -> Any:
    spec = importlib.util.spec_from_file_location("nightly_baseline", ROOT / ".ci" / "nightly_baseline.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("env", "runs", "says", "fails"),
    [
        ({}, 0, "First night: no successful nightly run exists yet", False),
        ({}, None, "GitHub could not say whether any exist: if this is the first night", True),
        ({"FIRST_NIGHT": "true"}, 12, "First night, as declared (first_night)", False),
        ({"NEW_BASELINE": "a new preset"}, 12, "New baseline from this night, declared: a new preset", False),
    ],
)
def test_what_a_night_without_earlier_nights_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], runs: int | None, says: str, fails: bool
) -> None:
    module = nightly_baseline()
    for name in ("FIRST_NIGHT", "NEW_BASELINE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with github_api(runs) as api:
        monkeypatch.setenv("GITHUB_API_URL", api)
        monkeypatch.setenv("GITHUB_REPOSITORY", "owner/repo")
        monkeypatch.setenv("DEFAULT_BRANCH", "main")
        nights, said, failed, _ = module.decide(tmp_path)
    assert (nights, failed) == ([], fails) and says in said


def test_the_baseline_starts_at_the_declared_night_in_run_order(tmp_path: Path) -> None:
    names = ["nightly-20261110-99-aaaaaaa.csv", "nightly-20261111-100-bbbbbbb.csv", "nightly-20261111-998-c.csv"]
    names += ["nightly-20261111-1000-ddddddd.csv", "nightly-20261109-eeeeeee.csv"]  # an older name without run id
    for name in names:
        (tmp_path / name).write_text("x")
    module = nightly_baseline()
    assert [p.name for p in module.baseline_nights(tmp_path)][0] == "nightly-20261109-eeeeeee.csv"
    (tmp_path / "baseline.txt").write_text("nightly-20261111-998-c.csv\ta new model\n")
    assert [p.name for p in module.baseline_nights(tmp_path)] == [
        "nightly-20261111-998-c.csv",
        "nightly-20261111-1000-ddddddd.csv",
    ]


@pytest.mark.parametrize(
    ("inputs", "variables", "first"),
    [({}, {}, "false"), ({"first_night": "true"}, {}, "true"), ({}, {"NIGHTLY_FIRST_NIGHT": "true"}, "true")],
)
def test_a_first_night_is_declared_by_the_manual_input_or_the_repository_variable(
    inputs: dict[str, str], variables: dict[str, str], first: str
) -> None:
    value = yaml.safe_load(WORKFLOW.read_text())["jobs"]["bench"]["env"]["FIRST_NIGHT"]
    assert substitute(value, {"inputs": inputs, "vars": variables}) == first


def test_a_night_whose_configuration_no_earlier_night_ran_fails_saying_what_to_do(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    other = renamed(nights[11], tmp_path / "renamed" / nights[11].name)
    job = run_job(tmp_path / "run", other, previous=history_artifact(tmp_path, nights[4:11]))
    log = job.logs[COMPARE]
    assert not job.ok, log
    assert "FAIL  wall_s worse by more than 25% at p ≤ 0.05 in" in log and "no earlier run of this configuration" in log
    assert "start a new baseline" in log


def test_a_declared_change_starts_a_new_baseline_that_later_nights_compare_with(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 13)
    changed = renamed(nights[11], tmp_path / "renamed" / nights[11].name)
    declared = run_job(
        tmp_path / "declared",
        changed,
        previous=history_artifact(tmp_path, nights[4:11]),
        run_id=11,
        inputs={"new_baseline": "Flint is now Qwen3-32B"},
    )
    assert declared.ok, declared.logs
    assert "New baseline from this night, declared: Flint is now Qwen3-32B" in declared.logs[COMPARE]
    history = declared.artifacts["bench-history"]
    start, reason = history["baseline.txt"].decode().strip().split("\t")
    assert re.fullmatch(r"nightly-\d{8}-11-0123456\.csv", start) and reason == "Flint is now Qwen3-32B"
    assert start in history and len(history) == 9  # seven earlier nights, this one, and the marker
    after = renamed(nights[12], tmp_path / "renamed-2" / nights[12].name)  # night 12: part3 30% slower
    later = run_job(tmp_path / "later", after, previous=history, run_id=12)
    log = later.logs[COMPARE]
    assert "Baseline: 3 runs from 1 files" in log  # only the night the baseline started from, not the seven before
    # 3 runs against 3 cannot tell a 30% slowdown: the gate says so rather than pass it as fine (REPS=8 could)
    assert "indeterminate  wall_s worse by more than 25%" in log and "3 vs 3 runs can detect no change" in log


def test_the_nightly_runs_as_many_reps_as_its_wall_time_gate_needs() -> None:
    from bench.analyze.power import runs_for

    env = yaml.safe_load(WORKFLOW.read_text())["jobs"]["bench"]["env"]
    chosen = runs_for(float(env["CATCH"]), float(env["WALL_GATE"]), float(env["WALL_CV"]), int(env["BASELINE_NIGHTS"]))
    assert int(env["REPS"]) == chosen == 8
    assert runs_for(float(env["CATCH"]), float(env["WALL_GATE"]), float(env["WALL_CV"]), 7) > 3  # 3 would not do


@pytest.mark.parametrize(
    ("docker", "inputs", "build", "why"),
    [
        (
            "docker-info-nvidia.txt",
            {},
            "cpu",
            "the NVIDIA Container Toolkit is here (docker runtime nvidia): the "
            "servers run under compose from the CUDA image",
        ),
        (
            "docker-info-plain.txt",
            {},
            "cuda",
            "no NVIDIA Container Toolkit here: the servers run on the host, from a CUDA build of llama.cpp",
        ),
        (
            "docker-info-nvidia.txt",
            {"gpu_build": "cuda"},
            "cuda",
            "asked for (the gpu_build input or the repository variable GPU_BUILD)",
        ),
    ],
)
def test_the_night_builds_host_cuda_only_where_the_servers_run_on_the_host(
    tmp_path: Path, docker: str, inputs: dict[str, str], build: str, why: str
) -> None:
    (night,) = synthetic_nights(tmp_path, 1)
    job = run_job(tmp_path / "run", night, previous=None, docker=docker, inputs=inputs)
    assert job.ok, job.logs
    assert job.logs["llama.cpp build"].strip() == f"llama.cpp build: {build} ({why})"
    assert [line.split()[:2] for line in job.makes] == [["gpu-check", f"GPU={build}"], ["bench", f"GPU={build}"]]


# What the night gates (issue 51): not across a llama.cpp build, the article's reprocessed tokens, a flaky run redone.


def test_a_night_on_another_llama_build_is_not_gated_and_starts_a_new_baseline(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 14)  # night 12: part3 30% slower, which would fail against the old build
    rebuilt = [
        rewritten(night, tmp_path / "rebuilt" / night.name, lambda row: {**row, "server_build": "b11434-5c6d7e8"})
        for night in nights[12:14]
    ]
    job = run_job(tmp_path / "new-build", rebuilt[0], previous=history_artifact(tmp_path, nights[5:12]), run_id=12)
    log = job.logs[COMPARE]
    assert job.ok, log
    assert "the llama.cpp build changed (b7786-0a1b2c3 -> b11434-5c6d7e8)" in log and "FAIL" not in log
    history = job.artifacts["bench-history"]
    start, reason = history["baseline.txt"].decode().strip().split("\t")
    assert start.endswith("-12-0123456.csv") and reason == "llama.cpp build b7786-0a1b2c3 -> b11434-5c6d7e8"
    later = run_job(tmp_path / "later", rebuilt[1], previous=history, run_id=13)
    assert "Baseline: 3 runs from 1 files" in later.logs[COMPARE]  # the new build's first night only, per group


def test_a_night_whose_reprocessed_tokens_rose_30_percent_fails(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)

    def more_reprocessing(row: dict[str, str]) -> dict[str, str]:
        return {**row, "prompt_tokens_reprocessed": str(round(int(row["prompt_tokens_reprocessed"]) * 1.3))}

    grown = rewritten(nights[11], tmp_path / "grown" / nights[11].name, more_reprocessing)
    job = run_job(tmp_path / "run", grown, previous=history_artifact(tmp_path, nights[4:11]))
    log = job.logs[COMPARE]
    assert not job.ok, log
    assert "FAIL  prompt_tokens_reprocessed worse by more than 20% at p ≤ 0.05" in log


def infra_night(tmp_path: Path, night: Path) -> tuple[Path, Path]:
    """The night with its first run cut by the infrastructure, and that run as measured when run again."""
    with open(night, newline="") as f:
        rows = list(csv.DictReader(f))
    cut = {**rows[0], "stop_reason": "infra_error", "error": "a llama-server died during the run", "wall_s": ""}
    later = (datetime.fromisoformat(rows[0]["started_at"]) + timedelta(hours=3)).isoformat(timespec="seconds")
    redone = {**rows[0], "run_id": rows[0]["run_id"] + "-again", "started_at": later}  # a run of its own, later
    return write_rows([cut, *rows[1:]], tmp_path / "cut" / night.name), write_rows([redone], tmp_path / "redo.csv")


def test_a_night_with_one_infra_error_runs_it_again_and_passes(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    cut, redone = infra_night(tmp_path, nights[11])
    job = run_job(tmp_path / "run", cut, previous=history_artifact(tmp_path, nights[4:11]), redo=redone)
    log = job.logs[COMPARE]
    assert job.ok, log
    assert [("RESUME=1" in line) for line in job.makes if line.startswith("bench")] == [False, True]
    assert "1 more run again" in log


def test_a_run_the_infrastructure_cut_twice_fails_the_night_naming_it(tmp_path: Path) -> None:
    nights = synthetic_nights(tmp_path, 12)
    cut, _ = infra_night(tmp_path, nights[11])
    with open(cut, newline="") as f:
        first = next(csv.DictReader(f))
    later = (datetime.fromisoformat(first["started_at"]) + timedelta(hours=3)).isoformat(timespec="seconds")
    again = write_rows([{**first, "run_id": first["run_id"] + "-again", "started_at": later}], tmp_path / "again.csv")
    job = run_job(tmp_path / "run", cut, previous=history_artifact(tmp_path, nights[4:11]), redo=again)
    log = job.logs[COMPARE]
    assert not job.ok, log
    assert "lost to the infrastructure" in job.logs["Bench"] and "FAIL  infra_error runs above 0%" in log
