"""A language's image inputs (bench/containers/language_images.py): the runner layer's tag follows every input, and
its build context lays the language's files out as the image's / (readable by the agent's user, scripts executable).
The images themselves are built and used in test_language_grading.py."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker.errors

from bench.containers.images import (
    FORWARDER_FILES,
    SANDBOX_LABEL,
    SYSTEM_LABEL,
    on_system_stage,
    sandbox_tag,
    system_tag,
)
from bench.containers.language_images import extras_tag, language_tag, write_extras
from bench.languages.kinds import KINDS


def test_the_runner_layers_tag_follows_each_of_its_inputs() -> None:
    java = KINDS["java"]
    toolchain = language_tag("agentbench/sandbox:abc", java)
    tag = extras_tag(toolchain, java)
    assert tag.startswith("agentbench/sandbox-java-run:") and tag == extras_tag(toolchain, java)
    changed = [
        extras_tag(language_tag("agentbench/sandbox:def", java), java),
        extras_tag(toolchain, dataclasses.replace(java, npm=("jest@29.7.0",))),
        extras_tag(toolchain, dataclasses.replace(java, image_setup="true")),
        extras_tag(toolchain, dataclasses.replace(java, image_files={"/usr/local/bin/java-tests": "#!/bin/sh\n"})),
    ]
    assert len({tag, *changed}) == 5


def test_the_build_context_holds_the_languages_files_at_their_image_paths(tmp_path: Path) -> None:
    cpp = KINDS["cpp"]
    java = dataclasses.replace(KINDS["java"], image_files={**KINDS["java"].image_files, **cpp.image_files})
    write_extras(java, tmp_path)
    script = tmp_path / "files/usr/local/bin/java-tests"
    main = tmp_path / "files/opt/bench-cpp/catch-main.cpp"
    assert script.read_text().startswith("#!/bin/sh") and script.stat().st_mode & stat.S_IXOTH
    assert "CATCH_CONFIG_MAIN" in main.read_text() and main.stat().st_mode & stat.S_IROTH
    assert not main.stat().st_mode & stat.S_IXUSR
    assert "COPY files/ /" in (tmp_path / "Dockerfile").read_text()


def test_the_system_stage_keeps_its_tag_when_agent_changes_and_the_sandbox_does_not(tmp_path: Path) -> None:
    """A change to agent/ makes a new sandbox image but the same system stage, where the toolchains are installed."""
    (tmp_path / "docker").mkdir()
    for name in ["sandbox.Dockerfile", *(p.name for p in FORWARDER_FILES)]:
        (tmp_path / "docker" / name).write_text(f"# {name}\n")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/loop.py").write_text("step = 1\n")
    before = sandbox_tag("debian:bookworm", tmp_path), system_tag("debian:bookworm", tmp_path)
    (tmp_path / "agent/loop.py").write_text("step = 2\n")
    after = sandbox_tag("debian:bookworm", tmp_path), system_tag("debian:bookworm", tmp_path)
    assert before[0] != after[0] and before[1] == after[1]
    (tmp_path / "docker/sandbox.Dockerfile").write_text("# changed\n")
    assert system_tag("debian:bookworm", tmp_path) != after[1]
    assert system_tag("debian:trixie", tmp_path) != system_tag("debian:bookworm", tmp_path)


class Images:
    """The engine's images, as much of them as on_system_stage asks: labels by tag, and the builds asked for."""

    def __init__(self, labels: dict[str, dict[str, str]]) -> None:
        self.labels, self.built = labels, []

    def get(self, tag: str) -> Any:
        if tag not in self.labels:
            raise docker.errors.ImageNotFound(tag)
        return SimpleNamespace(labels=self.labels[tag])

    def build(self, **kwargs: Any) -> None:
        self.built.append(kwargs)
        self.labels[kwargs["tag"]] = kwargs["labels"]


def test_the_toolchain_goes_on_the_system_stage_the_sandbox_names_and_else_on_the_image_itself() -> None:
    sandbox, system = "agentbench/sandbox:new", "agentbench/sandbox-system:s"
    named = {SYSTEM_LABEL: system, SANDBOX_LABEL: sandbox}
    images = Images({sandbox: named, system: {}, "agentbench/test-no-pytest:x": named, "old/sandbox:1": {}})
    client = SimpleNamespace(images=images)
    bases: list[str] = []

    def toolchain(base: str) -> str:
        bases.append(base)
        return f"agentbench/sandbox-go:{base.rpartition(':')[2]}"

    tag = on_system_stage(client, sandbox, toolchain)
    assert bases == [system] and tag.startswith("agentbench/sandbox-go-code:")
    (build,) = images.built
    assert (build["tag"], build["buildargs"]) == (tag, {"BASE": "agentbench/sandbox-go:s", "SANDBOX": sandbox})
    # an image made from the sandbox image carries its labels, which name another tag; an old one names none
    assert on_system_stage(client, "agentbench/test-no-pytest:x", toolchain) == "agentbench/sandbox-go:x"
    assert on_system_stage(client, "old/sandbox:1", toolchain) == "agentbench/sandbox-go:1"
    del images.labels[system]  # a system stage no longer here: the toolchain goes on the sandbox image itself
    assert on_system_stage(client, sandbox, toolchain) == "agentbench/sandbox-go:new"
    assert bases[1:] == ["agentbench/test-no-pytest:x", "old/sandbox:1", sandbox] and len(images.built) == 1
