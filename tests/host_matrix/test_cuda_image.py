"""The host matrix, the CUDA image column: the recipe `make gpu-image` builds (docker/llama-cuda.Dockerfile), read
here since no registry is reachable: a CUDA 12 base NVIDIA publishes (12.4 or later), a C++ compiler in the build
stage, native code for sm_80/86/89/90 plus PTX for newer cards, a tag naming the CUDA and the build, and whether
it runs on each recorded driver branch (bench/llama/cuda_compat.py, which `make gpu-check` asks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from host_matrix.recorded import BRANCHES, driver_line

from bench.llama.cuda_compat import COMPRESSION_MODE, parse_cuda, runs_on
from bench.llama.cuda_image import (
    COMPRESSION_LABEL,
    CUDA_DOCKERFILE,
    CUDA_IMAGE,
    CUDA_VERSION,
    LLAMA_BUILD,
    SDIST_REQUIREMENT,
)
from bench.llama.pin import image_pin

ROOT = Path(__file__).resolve().parents[2]
RECIPE = (ROOT / CUDA_DOCKERFILE).read_text()


def stages() -> list[list[str]]:
    """The recipe's stages, each a list of its instructions (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", RECIPE)
    found: list[list[str]] = []
    for line in (line.strip() for line in joined.splitlines()):
        if line.startswith("FROM "):
            found.append([line])
        elif line and not line.startswith("#") and found:
            found[-1].append(line)
    return found


def test_the_bases_are_the_last_cuda_12_update_nvidia_publishes_and_the_tag_names_cuda_and_build() -> None:
    bases = dict(re.findall(r"^ARG (CUDA_DEVEL|CUDA_RUNTIME)=(\S+)$", RECIPE, re.MULTILINE))
    assert bases == {
        "CUDA_DEVEL": f"nvidia/cuda:{CUDA_VERSION}-devel-ubuntu24.04",
        "CUDA_RUNTIME": f"nvidia/cuda:{CUDA_VERSION}-runtime-ubuntu24.04",
    }
    cuda = parse_cuda(CUDA_VERSION)
    assert cuda is not None and cuda[0] == 12 and cuda >= (12, 4)  # llama.cpp's own CI builds with 12.4 and later
    assert f"agentbench/llama-cuda:cu12.9-{LLAMA_BUILD}" == CUDA_IMAGE
    assert image_pin(CUDA_IMAGE) == LLAMA_BUILD == f"b{SDIST_REQUIREMENT.split('==')[1].split('.')[0]}"


def test_the_build_stage_installs_a_cpp_compiler_before_it_configures() -> None:
    build, runtime = stages()
    assert build[0] == "FROM ${CUDA_DEVEL} AS build" and runtime[0] == "FROM ${CUDA_RUNTIME}"
    install = next(i for i, step in enumerate(build) if step.startswith("RUN apt-get") and "build-essential" in step)
    configure = next(i for i, step in enumerate(build) if step.startswith("RUN cmake -S /src"))
    assert install < configure and "cmake" in build[install].split()
    assert "--target llama-server" in build[configure] and "-DLLAMA_USE_PREBUILT_UI=OFF" in build[configure]


def test_native_code_for_a100_l4_h100_and_ptx_for_newer_cards() -> None:
    archs = set(re.findall(r'^ARG CUDA_ARCHITECTURES="([^"]+)"$', RECIPE, re.MULTILINE))
    assert archs == {"80-real;86-real;89-real;90-real;90-virtual"}  # both stages: the label says what was built


def test_the_kernels_are_compressed_as_nvcc_does_by_default_and_the_label_says_so() -> None:
    build, runtime = stages()
    configure = next(step for step in build if step.startswith("RUN cmake -S /src"))
    assert '"-DGGML_CUDA_COMPRESSION_MODE=${CUDA_COMPRESSION}"' in configure
    modes = set(re.findall(r"^ARG CUDA_COMPRESSION=(\S+)$", RECIPE, re.MULTILINE))
    assert modes == {COMPRESSION_MODE} == {"speed"}  # both stages, so the label tells what was built
    assert f'{COMPRESSION_LABEL}="${{CUDA_COMPRESSION}}"' in next(s for s in runtime if s.startswith("LABEL "))


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_image_runs_on_each_driver_branch_and_its_ptx_only_where_the_driver_compiles_it(branch: str) -> None:
    version, driver = driver_line(branch)
    image = parse_cuda(CUDA_VERSION)
    assert image is not None
    # native code and nvcc's default compression: minor version compatibility from R535 on
    assert runs_on(image, driver, compression=COMPRESSION_MODE, driver_version=version) is None
    ptx = runs_on(image, driver, ptx_only=True)  # a card newer than sm_90 gets the compute_90 PTX
    if branch == "R580":
        assert ptx is None
    else:
        cuda = f"{driver[0]}.{driver[1]}"
        assert (
            ptx
            == f"built as PTX with CUDA 12.9, which this driver (CUDA {cuda}) cannot compile: PTX needs a driver as new"
        )


@pytest.mark.parametrize("branch", BRANCHES)
def test_llama_cpp_default_compression_would_not_load_on_r535(branch: str) -> None:
    """The same image with llama.cpp's -compress-mode=size (its default from CUDA 12.8: what an image built before
    this recipe passed the mode, or a published one, carries): R535 refuses its kernels, R550 on load them."""
    version, driver = driver_line(branch)
    image = parse_cuda(CUDA_VERSION)
    assert image is not None
    why = runs_on(image, driver, compression="", driver_version=version)
    if branch == "R535":
        assert why and "need driver 550.54.14 or later (this one: 535.183.01)" in why
        assert "-DGGML_CUDA_COMPRESSION_MODE=speed" in why
    else:
        assert why is None


def test_compose_and_the_settings_name_the_same_image() -> None:
    compose = (ROOT / "compose.yaml").read_text()
    assert compose.count(f"${{LLAMA_IMAGE:-{CUDA_IMAGE}}}") == 2
    assert f"llama_image: {CUDA_IMAGE}\n" in (ROOT / "bench.yaml").read_text()
