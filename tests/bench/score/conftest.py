"""The graders the grading attacks are tried against: the local one, and the docker one in the real tiers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.score.graders import Grader, LocalGrader


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow])])
def grader(request: pytest.FixtureRequest) -> Iterator[Grader]:
    if request.param == "local":
        yield LocalGrader()
        return
    from bench.containers.engine import docker_client
    from bench.containers.images import ensure_sandbox_image
    from bench.score.graders import DockerGrader

    client: Any = docker_client()
    yield DockerGrader(client, ensure_sandbox_image(client))
