"""Hub references and the cache: parsing, where the cache is, which file llama.cpp picks, finding it once fetched."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.llama.hub import (
    HubRef,
    cache_dir,
    cached_model,
    choose_model_file,
    host_path,
    hub_environment,
    parse_hub_ref,
)


@pytest.mark.parametrize(
    ("text", "repo", "quant"),
    [
        ("ggml-org/gpt-oss-20b-GGUF:mxfp4", "ggml-org/gpt-oss-20b-GGUF", "mxfp4"),
        ("ggml-org/Qwen3-0.6B-GGUF:Q8_0", "ggml-org/Qwen3-0.6B-GGUF", "Q8_0"),
        (" unsloth/Qwen3.5-0.8B-GGUF ", "unsloth/Qwen3.5-0.8B-GGUF", ""),
    ],
)
def test_a_reference_is_a_repository_and_an_optional_quant(text: str, repo: str, quant: str) -> None:
    ref = parse_hub_ref(text, "flint_hf")
    assert (ref.repo, ref.quant) == (repo, quant)
    assert str(ref) == text.strip()


@pytest.mark.parametrize(
    "text", ["gpt-oss-20b-GGUF", "a/b/c", "ggml-org/-bad", "ggml-org/x:Q4 K", "https://hf.co/ggml-org/x", ""]
)
def test_a_malformed_reference_is_refused_naming_the_setting_and_the_form(text: str) -> None:
    with pytest.raises(ConfigError, match=r"jeff_hf must be OWNER/REPO\[:QUANT\]"):
        parse_hub_ref(text, "jeff_hf")


def test_the_cache_folder_is_the_setting_else_llama_cpp_s_own_order(tmp_path: Path) -> None:
    home = Path.home()
    assert cache_dir(str(tmp_path / "mine")) == tmp_path / "mine"
    assert cache_dir("", {}) == home / ".cache" / "huggingface" / "hub"
    assert cache_dir("", {"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "huggingface" / "hub"
    assert cache_dir("", {"XDG_CACHE_HOME": "/x", "HF_HOME": str(tmp_path)}) == tmp_path / "hub"
    assert cache_dir("", {"HF_HOME": "/x", "HF_HUB_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    assert cache_dir("", {"HF_HUB_CACHE": "/x", "LLAMA_CACHE": str(tmp_path / "l")}) == tmp_path / "l"


def test_servers_get_the_cache_and_only_the_hub_variables_that_are_set(tmp_path: Path) -> None:
    env = hub_environment(tmp_path, {"MODEL_ENDPOINT": "http://127.0.0.1:9/", "HF_TOKEN": "", "PATH": "/bin"})
    assert env == {"LLAMA_CACHE": str(tmp_path), "MODEL_ENDPOINT": "http://127.0.0.1:9/"}


FILES = [
    "README.md",
    "mmproj-model-f16.gguf",
    "model-Q4_K_M.gguf",
    "model-Q8_0.gguf",
    "big/model-Q6_K-00002-of-00003.gguf",
    "big/model-Q6_K-00001-of-00003.gguf",
    "model-mxfp4.gguf",
]


@pytest.mark.parametrize(
    ("quant", "chosen"),
    [
        ("Q8_0", "model-Q8_0.gguf"),
        ("q8_0", "model-Q8_0.gguf"),  # llama.cpp matches the tag ignoring case
        ("MXFP4", "model-mxfp4.gguf"),
        ("Q6_K", "big/model-Q6_K-00001-of-00003.gguf"),  # the first part of a split model
        ("", "model-Q4_K_M.gguf"),  # no tag: Q4_K_M first
        ("IQ2_XS", None),
    ],
)
def test_the_file_is_chosen_the_way_llama_cpp_chooses_it(quant: str, chosen: str | None) -> None:
    assert choose_model_file(FILES, HubRef("o/r", quant)) == chosen


def test_without_a_tag_and_without_q4_k_m_the_first_model_file_counts() -> None:
    assert choose_model_file(["mmproj-f16.gguf", "tiny-F32.gguf"], HubRef("o/r")) == "tiny-F32.gguf"


def fetched(cache: Path, repo: str, name: str, content: bytes, commit: str = "a" * 40) -> Path:
    """The layout llama.cpp leaves in the cache (seen from the real server in tests/integration/test_hub_fetch.py)."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    (folder / "blobs").mkdir()
    (folder / "blobs" / "f00d").write_bytes(content)
    (folder / "snapshots" / commit).mkdir(parents=True)
    (folder / "snapshots" / commit / name).symlink_to(Path("../../blobs/f00d"))
    return folder / "snapshots" / commit / name


def test_a_fetched_file_is_found_in_the_snapshot_of_main(tmp_path: Path) -> None:
    path = fetched(tmp_path, "ggml-org/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q8_0.gguf", b"GGUF")
    found = cached_model(tmp_path, HubRef("ggml-org/Qwen3-0.6B-GGUF", "Q8_0"))
    assert found == path and found.read_bytes() == b"GGUF"
    assert cached_model(tmp_path, HubRef("ggml-org/Qwen3-0.6B-GGUF", "Q4_0")) is None
    assert cached_model(tmp_path, HubRef("ggml-org/other", "Q8_0")) is None


def test_a_download_in_progress_is_not_a_fetched_file(tmp_path: Path) -> None:
    path = fetched(tmp_path, "o/r", "m-Q8_0.gguf", b"")
    path.unlink()  # llama.cpp links the snapshot entry only once the blob is complete
    (path.parent.parent.parent / "blobs" / "f00d.downloadInProgress").write_bytes(b"GG")
    assert cached_model(tmp_path, HubRef("o/r", "Q8_0")) is None


def test_a_container_path_under_the_cache_mount_is_mapped_to_the_host(tmp_path: Path) -> None:
    inside = Path("/cache/models--o--r/snapshots/abc/m.gguf")
    assert host_path(inside, "/cache", tmp_path) == tmp_path / "models--o--r/snapshots/abc/m.gguf"
    assert host_path(Path("/models/m.gguf"), "/cache", tmp_path) == Path("/models/m.gguf")
