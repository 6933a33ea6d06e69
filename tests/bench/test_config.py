from pathlib import Path

import pytest

from bench.config import load_config
from bench.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


def test_defaults_without_a_file() -> None:
    config = load_config(None, {})
    assert config.matrix() == [("todo_repo", "part3", 4096)]
    assert config.sampling == {"temperature": 0.0, "seed": 42}


def test_command_line_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "ctx: [4096]\npresets: [part2]\nreps: 3\n")
    config = load_config(path, {"ctx": [8192, 4096], "reps": None})
    assert config.reps == 3  # None means "not given on the command line"
    assert config.matrix() == [("todo_repo", "part2", 8192), ("todo_repo", "part2", 4096)]


def test_groups_build_the_article_matrix_and_cli_ctx_replaces_them(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "groups:\n  - {presets: [part2], ctx: [4096, 8192]}\n  - {presets: [clearing], ctx: [4096]}\n"
        "  - {presets: [part3, part2], ctx: [4096]}\n",
    )
    assert load_config(path, {}).matrix() == [
        ("todo_repo", "part2", 4096),
        ("todo_repo", "part2", 8192),
        ("todo_repo", "clearing", 4096),
        ("todo_repo", "part3", 4096),
    ]
    assert load_config(path, {"ctx": [512]}).matrix() == [("todo_repo", "part3", 512)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ctxs: [4096]\n", "unknown setting 'ctxs'"),
        ("presets: [part4]\n", "unknown preset 'part4'"),
        ("ctx: [128]\n", "at least 256"),
        ("ctx: 4096\n", "non-empty list of int"),
        ("sandbox: vm\n", "sandbox must be one of"),
        ("clear_at: 1.5\n", "clear_at must be in"),
        ("groups:\n  - {ctx: [4096]}\n", "each group needs presets"),
        ("ctx: [4096\n", "not valid YAML"),
        ("- just a list\n", "must hold a mapping"),
    ],
)
def test_bad_settings_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text), {})


def test_repository_configs_load() -> None:
    root = Path(__file__).resolve().parents[2]
    assert load_config(root / "bench.yaml", {}).matrix()
    article = load_config(root / "experiments" / "article-part3.yaml", {})
    assert len(article.matrix()) == 5 and article.reps == 3


def test_compose_variables_in_the_environment_override_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path, "models_dir: ./models\nflint_model: ''\nllama_image: ghcr.io/ggml-org/llama.cpp:server-cuda\n"
    )
    monkeypatch.setenv("MODELS_DIR", "/srv/models")
    monkeypatch.setenv("FLINT_MODEL", "coder.gguf")
    monkeypatch.setenv("LLAMA_IMAGE", "ghcr.io/ggml-org/llama.cpp:server-cuda-b7786")
    monkeypatch.setenv("JEFF_MODEL", "")  # empty: not set
    config = load_config(path, {})
    assert (config.models_dir, config.flint_model, config.jeff_model) == ("/srv/models", "coder.gguf", "")
    assert config.llama_image.endswith("-b7786")
