"""Host servers independent of the host: offline once their models are here, no user's config.ini."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import PrerequisiteError
from bench.llama.hub import HubRef
from bench.llama.server_env import empty_config_home, offline_environment

QWEN = HubRef("ggml-org/Qwen3-0.6B-GGUF", "Q8_0")


def cached(cache: Path, ref: HubRef, name: str) -> None:
    folder = cache / ref.folder
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("c0ffee")
    (folder / "snapshots" / "c0ffee").mkdir(parents=True)
    (folder / "snapshots" / "c0ffee" / name).write_bytes(b"GGUF")


def test_offline_only_once_every_model_is_here(tmp_path: Path) -> None:
    local = tmp_path / "flint.gguf"
    assert offline_environment([local], tmp_path) == {"LLAMA_ARG_OFFLINE": "1"}
    assert offline_environment([local, QWEN], tmp_path) == {}  # the first start fetches Qwen
    cached(tmp_path, QWEN, "Qwen3-0.6B-Q8_0.gguf")
    assert offline_environment([local, QWEN], tmp_path) == {"LLAMA_ARG_OFFLINE": "1"}


def test_the_config_home_is_the_benchs_own_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    home = Path(empty_config_home(tmp_path / "no-system-config")["XDG_CONFIG_HOME"])
    (home / "llama.cpp").mkdir()
    (home / "llama.cpp" / "config.ini").write_text("ctx-size = 8\n")
    assert Path(empty_config_home(tmp_path / "no-system-config")["XDG_CONFIG_HOME"]) == home
    assert not (home / "llama.cpp" / "config.ini").exists()


def test_a_system_wide_config_is_refused_in_one_line(tmp_path: Path) -> None:
    system = tmp_path / "config.ini"
    system.write_text("[*]\nctx-size = 8\n")
    with pytest.raises(PrerequisiteError) as caught:
        empty_config_home(system)
    assert str(system) in str(caught.value) and "\n" not in str(caught.value)
