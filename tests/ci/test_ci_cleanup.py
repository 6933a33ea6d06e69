"""`.ci/run` shares its host with other CI runs and a user's own benches: its clean-up removes the containers,
networks and volumes that carry its own label and nothing else, and the bench puts that label
(AGENTBENCH_CONTAINER_LABEL) on everything it creates. The clean-up's own bash function runs against the real engine."""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.containers.engine import EXTRA_LABEL_VARIABLE, LABEL, docker_client, remove_container, role_labels
from bench.containers.names import OWNER_LABEL, BenchNames
from bench.score.graders import DockerGrader

ROOT = Path(__file__).resolve().parents[2]
CI_RUN = ROOT / ".ci" / "run"


def remove_own_function() -> str:
    """The `remove_own` function of .ci/run, as bash reads it there."""
    found = re.search(r"^remove_own\(\) \{\n.*?^\}\n", CI_RUN.read_text(), flags=re.S | re.M)
    assert found, ".ci/run defines remove_own() { ... }"
    return found.group(0)


def test_the_callers_label_is_on_every_role_beside_the_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EXTRA_LABEL_VARIABLE, "agentbench.ci=ab12cd")
    names = BenchNames("1234abcd")
    assert names.labels("sandbox") == {LABEL: "sandbox", "agentbench.ci": "ab12cd", OWNER_LABEL: "1234abcd"}
    assert DockerGrader(client=None, image="x").labels == {LABEL: "grader", "agentbench.ci": "ab12cd"}
    monkeypatch.delenv(EXTRA_LABEL_VARIABLE)
    assert role_labels("grader") == {LABEL: "grader"}


def test_ci_run_keeps_its_files_in_a_temp_folder_of_its_own() -> None:
    text = CI_RUN.read_text()
    fixed = [name for name in re.findall(r"/tmp/[\w.-]+", text) if not name.endswith(".XXXXXX")]
    assert fixed == [], f".ci/run names fixed temp paths another CI run would share: {fixed}"
    assert "export AGENTBENCH_CONTAINER_LABEL=$ci_label" in text


@pytest.mark.docker
@pytest.mark.processes
def test_the_clean_up_removes_what_carries_its_label_and_leaves_another_runs(child_processes: None) -> None:
    client: Any = docker_client()
    image = client.images.list()[0].id  # any image here: the containers are created, never started
    mine, theirs = "agentbench.ci=test-mine", "agentbench.ci=test-theirs"
    made: list[Any] = []
    try:
        for label in (mine, theirs):
            key, _, value = label.partition("=")
            labels = {LABEL: "sandbox", key: value}
            made.append(client.networks.create(f"agentbench-citest-{value}", internal=True, labels=labels))
            made.append(client.volumes.create(f"agentbench-citest-{value}", labels=labels))
            made.append(client.containers.create(image, ["true"], labels=labels, name=f"agentbench-citest-{value}"))
        script = remove_own_function() + "remove_own docker\n"
        subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", "ci_label": mine}, check=True)
        left = []  # by this test's two labels: under CI every container of the suite carries the run's own
        for label in (mine, theirs):
            left += [c.name for c in client.containers.list(all=True, filters={"label": label})]
            left += [n.name for n in client.networks.list(filters={"label": label})]
            left += [v.name for v in client.volumes.list(filters={"label": label})]
        assert sorted(left) == ["agentbench-citest-test-theirs"] * 3
    finally:
        for item in made:
            if hasattr(item, "status"):
                remove_container(client, item.id)
        for item in made:
            if not hasattr(item, "status"):
                with contextlib.suppress(Exception):  # gone already: the clean-up removed it
                    item.remove()
