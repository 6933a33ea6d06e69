"""A grading image without pytest is the grader's fault, named as such (bench/run/grade.py): refused before the first
run by the preflight, and a run graded there is infra_error (`--resume` runs it again), never hidden 0 of N. The
image is real: the sandbox image with pytest removed, run by the real Docker engine."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from small_task import NAME, ROOT

from bench.containers.engine import docker_client, role_labels
from bench.containers.images import ensure_sandbox_image
from bench.errors import PrerequisiteError
from bench.fixtures.fixture import load_fixture
from bench.ownership import new_instance_id
from bench.run.grade import grade_run
from bench.run.preflight import hidden_tests_problem
from bench.score.graders import DockerGrader

pytestmark = pytest.mark.docker
CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def no_pytest_image() -> Iterator[str]:
    """The sandbox image of this checkout, every pytest of its Pythons removed."""
    client: Any = docker_client()
    base = ensure_sandbox_image(client, CHECKOUT)
    recipe = f"FROM {base}\nUSER root\nRUN python3 -m pip uninstall -y -q pytest 2>/dev/null; "
    recipe += 'rm -rf $(python3 -c \'import sys; print(" ".join(p + "/pytest " + p + "/_pytest" for p in sys.path))\')'
    recipe += "; ! python3 -c 'import pytest'\n"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        data = recipe.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive.seek(0)
    tag = f"agentbench/test-no-pytest:{new_instance_id()}"  # its own: other checkouts' tests run beside
    client.images.build(fileobj=archive, custom_context=True, tag=tag, rm=True, labels=role_labels("test"))
    yield tag
    # by its tag: a worker beside this one built the same image (same id) under its own tag, which removing the id
    # would take away from under it
    client.images.remove(tag, force=True)


def test_the_preflight_names_the_image_not_the_fixture(no_pytest_image: str) -> None:
    grader = DockerGrader(docker_client(), no_pytest_image, labels=role_labels("grader"))
    fixture = load_fixture(NAME, root=ROOT)
    with_pytest = DockerGrader(docker_client(), ensure_sandbox_image(docker_client(), CHECKOUT))
    assert hidden_tests_problem(fixture, with_pytest) is None  # asked first: its answer is not the other image's
    with pytest.raises(PrerequisiteError) as caught:
        hidden_tests_problem(fixture, grader)
    said = str(caught.value)
    assert said.startswith(f"the grading image {no_pytest_image} has no pytest (No module named 'pytest')")
    assert said.endswith("nothing was run") and NAME not in said and "\n" not in said


def test_a_run_graded_there_is_infra_error_not_a_zero(no_pytest_image: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"fixture": NAME, "fixtures_root": str(ROOT)}))
    (run_dir / "diff.patch").write_text("")
    grader = DockerGrader(docker_client(), no_pytest_image, labels=role_labels("grader"))
    score, why = grade_run(run_dir, grader, CHECKOUT)
    assert score is None and why is not None
    assert why.startswith(f"grading could not run: the grading image {no_pytest_image} has no pytest"), why
    with_pytest = DockerGrader(docker_client(), ensure_sandbox_image(docker_client(), CHECKOUT))
    graded, nothing = grade_run(run_dir, with_pytest, CHECKOUT)
    assert nothing is None and graded is not None and graded.hidden_total > 0  # the same run, a grader with pytest
