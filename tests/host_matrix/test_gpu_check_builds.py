"""The host matrix, `make gpu-check`'s build rows: each recorded driver branch against the CUDA image as this recipe
builds it (CUDA 12.9, native code, `-compress-mode=speed` in its label), the same image built before the recipe
passed the mode (no label: llama.cpp's default, size), and a host CUDA build with a 12.9 toolkit, as gpu-check reads
them (the image's CUDA_VERSION and labels from the engine, the host build's .venv/cuda files). R535 cannot load
kernels compressed with size whatever minor version compatibility says, so only that cell fails, naming the fix.
Whether the Container Toolkit's forward compatibility rescues such an image is not a build fact: the kernel row
(bench/llama/kernel_check.py) runs one and says."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from host_matrix.recorded import BRANCHES, driver_line

from bench import gpu_check
from bench.config import BenchConfig
from bench.llama.cuda_image import ARCH_LABEL, COMPRESSION_LABEL, CUDA_IMAGE
from bench.testing.fake_pynvml import FakeDevice, FakeNvml, State

ARCHS = "80-real;86-real;89-real;90-real;90-virtual"


class Engine:
    """The engine's answer for the one image gpu-check asks about: its environment and labels."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.images = self
        self.labels = labels

    def get(self, image: str) -> Any:
        env = ["CUDA_VERSION=12.9.2"]
        return SimpleNamespace(attrs={"Config": {"Env": env}}, labels=self.labels)


def rows(branch: str, labels: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    version, cuda = driver_line(branch)
    nvml = FakeNvml([FakeDevice("GPU-a", [State(0)])], driver=version, cuda_driver=cuda[0] * 1000 + cuda[1] * 10)
    monkeypatch.setattr(gpu_check, "start_nvml", lambda: (nvml, None))
    monkeypatch.setattr(gpu_check, "llama_backend", lambda: "cuda")
    monkeypatch.setattr(gpu_check, "host_build_cuda", lambda: "12.9")
    monkeypatch.setattr(gpu_check, "host_build_compression", lambda: "speed")  # as .ci/cuda_toolkit.py writes
    return gpu_check.check_builds(BenchConfig(llama_image=CUDA_IMAGE), Engine(labels))


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_image_and_a_12_9_host_build_as_the_bench_makes_them_pass_on_every_branch(
    branch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    image, host = rows(branch, {ARCH_LABEL: ARCHS, COMPRESSION_LABEL: "speed"}, monkeypatch)
    assert (image.status, host.status) == ("ok", "ok"), (image, host)
    assert "-compress-mode=speed" in image.detail and "-compress-mode=speed" in host.detail


@pytest.mark.parametrize("branch", BRANCHES)
def test_an_image_built_with_llama_cpp_s_default_fails_on_r535_only_naming_the_fix(
    branch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    image, _ = rows(branch, {ARCH_LABEL: ARCHS}, monkeypatch)
    if branch == "R535":
        assert image.status == "FAIL"
        assert "need driver 550.54.14 or later (this one: 535.183.01)" in image.detail
        assert "rebuild with -DGGML_CUDA_COMPRESSION_MODE=speed" in image.detail
    else:
        assert image.status == "ok" and "-compress-mode=size" in image.detail


@pytest.mark.parametrize("forward_compat", [True, False], ids=["forward-compat", "no-forward-compat"])
def test_on_r535_the_kernel_row_decides_an_image_the_labels_predict_will_not_load(
    forward_compat: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image with llama.cpp's default compression on R535: with the Container Toolkit's forward compatibility its
    kernel runs on the card, and gpu-check's table says the image runs (the prediction kept in the detail); without
    it the kernel fails with the CUDA error and both rows fail, naming the fix."""
    image, _ = rows("R535", {ARCH_LABEL: ARCHS}, monkeypatch)
    what = f"image kernel on the card ({CUDA_IMAGE})"
    kernel = (
        gpu_check.Check(what, "ok", "GPU-a: 4 tokens completed with every layer on the card")
        if forward_compat
        else gpu_check.Check(what, "FAIL", "GPU-a: CUDA error: device kernel image is invalid")
    )
    servers = gpu_check.Check("servers", "ok", "compose: ...")
    found = gpu_check.settled([image, servers], kernel)
    if forward_compat:
        assert found[0].status == "ok" and found[0].detail.startswith("predicted: ")
        assert "need driver 550.54.14 or later" in found[0].detail and "ran on the card all the same" in found[0].detail
    else:
        assert found[0] == image and image.status == "FAIL" and kernel.status == "FAIL"
    assert found[1] == servers  # only the image's row is the kernel's to settle
