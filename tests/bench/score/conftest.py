"""The graders the grading attacks are tried against (the local one, and the docker one in the real tiers), and the
tasks they grade: todo_repo (program-style: its hidden tests run todo.py about a hundred times a grading) and the
suite's small task, calc (tests/small_task.py: library-style, a grading of one pytest)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import small_task

from bench import ROOT
from bench.fixtures.fixture import Fixture, load_fixture
from bench.score.graders import Grader, LocalGrader


@pytest.fixture(scope="module")
def todo() -> Fixture:
    return load_fixture("todo_repo", ROOT)


@pytest.fixture(scope="module")
def calc() -> Fixture:
    return load_fixture(small_task.NAME, small_task.ROOT)


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow])])
def grader(request: pytest.FixtureRequest) -> Iterator[Grader]:
    if request.param == "local":
        yield LocalGrader()
        return
    from bench.containers.engine import docker_client
    from bench.containers.images import ensure_sandbox_image
    from bench.score.graders import DockerGrader

    client: Any = docker_client()
    yield DockerGrader(client, ensure_sandbox_image(client, ROOT))
