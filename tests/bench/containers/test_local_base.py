"""`make test` and `make bench` choose the Dockerfiles' base image (bench.containers.local_base): the decision with a
stand-in engine, and the real engine here answering without any pull (no test contacts a registry). Making the image
for real is what .ci/run does on every CI run (.ci/base-image.sh)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench import ROOT
from bench.containers import local_base
from bench.containers.local_base import DEFAULT_BASES, LOCAL_IMAGE, choose


def never_pulled(image: str) -> str | None:
    raise AssertionError(f"{image} would have been pulled")


def test_the_setting_wins_and_nothing_is_asked_of_the_engine() -> None:
    choice = choose("my/base:1", True, lambda image: pytest.fail("asked"), never_pulled)
    assert (choice.image, choice.make) == ("my/base:1", False)


def test_without_an_engine_nothing_is_made() -> None:
    assert choose("", False, lambda image: False, never_pulled) == choose("", False, lambda image: True, never_pulled)
    assert not choose("", False, lambda image: False, never_pulled).make


def test_the_defaults_present_or_pulled_are_used_as_they_are() -> None:
    assert choose("", True, lambda image: True, never_pulled).image == ""
    pulled: list[str] = []

    def pull(image: str) -> str | None:
        pulled.append(image)
        return None

    choice = choose("", True, lambda image: image == DEFAULT_BASES[0], pull)
    assert (choice.image, choice.make, pulled) == ("", False, [DEFAULT_BASES[1]])


def test_a_default_that_cannot_be_pulled_makes_the_local_image_once() -> None:
    choice = choose("", True, lambda image: False, lambda image: "APIError: no registry reachable")
    assert (choice.image, choice.make) == (LOCAL_IMAGE, True)
    assert "cannot be pulled here (APIError: no registry reachable)" in choice.why
    made = choose("", True, lambda image: image == LOCAL_IMAGE, never_pulled)  # the next time: cached, no pull
    assert (made.image, made.make) == (LOCAL_IMAGE, False)


@pytest.mark.usefixtures("child_processes")
def test_the_command_prints_only_the_image_on_stdout() -> None:
    env = {"AGENTBENCH_BASE_IMAGE": "my/base:1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.containers.local_base"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout) == (0, "my/base:1\n")


@pytest.mark.docker
def test_the_real_engine_here_is_answered_without_a_pull(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENTBENCH_BASE_IMAGE", raising=False)
    monkeypatch.setattr(local_base, "_pull", lambda client: never_pulled)
    monkeypatch.setattr(local_base, "MAKE_SCRIPT", ROOT / "no-such-script")  # making is CI's part
    assert local_base.main() == 0
    assert capsys.readouterr().out.strip() in ("", LOCAL_IMAGE)  # CI has made agentbench/base:bookworm


def test_the_makefile_runs_tests_and_benches_on_the_chosen_image() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "python -m bench.containers.local_base" in makefile
    for target in ("test: base-prerequisites lint test-model", "bench: base-prerequisites setup"):
        recipe = makefile.split(f"\n{target}\n", 1)[1].split("\n\n", 1)[0]
        # The line that runs pytest or the bench (after `make bench` says where its variables came from).
        runs = next(line.strip() for line in recipe.splitlines() if "$(BIN)/python" in line)
        assert runs.startswith("$(BASE_IMAGE)"), target
