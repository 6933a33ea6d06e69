"""A language's image inputs (bench/containers/language_images.py): the runner layer's tag follows every input, and
its build context lays the language's files out as the image's / (readable by the agent's user, scripts executable).
The images themselves are built and used in test_language_grading.py."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

from bench.containers.images import FORWARDER_FILES, sandbox_tag, system_tag
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
