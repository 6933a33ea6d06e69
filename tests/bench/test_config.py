"""bench.yaml and command-line overrides: every key typed and range-checked at load, errors in one line."""

from pathlib import Path

import pytest
import yaml

from bench.analyze.prediction_file import load_predictions
from bench.config import SETTINGS, load_config
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


# Every key: a value of the wrong type, and a value of the right type out of range (None: the type has no range).
WRONG = {
    "fixtures": ("todo_repo", []),
    "presets": ("part3", ["part4"]),
    "agents": ("article", ["no-such-agent"]),
    "ctx": ("4096", [128]),
    "groups": ("part3", "[{presets: [part3], ctx: [100]}]"),
    "reps": ('"3"', 0),
    "max_steps": ('"2"', 0),
    "sandbox": (1, "vm"),
    "servers": (True, "cloud"),
    "out": (5, '""'),
    "resume": ('"yes"', None),
    "keep": ('"two"', -1),
    "clear_at": ('"0.5"', 1.5),
    "sampling": ("[0.7]", {"temperature": [1]}),
    "use_jeff": ('"no"', None),
    "grading_overlap": ('"yes"', None),
    "jeff_steps": ('"three"', -1),
    "agent_retries": (1.5, 99),
    "agent_retry_delay_s": ('"1s"', -1),
    "run_timeout_s": ('"soon"', -5),
    "request_timeout_s": ("[1]", 0),
    "jeff_timeout_s": ('"10s"', -1),
    "server_start_timeout_s": ("[600]", 0),
    "jeff_ctx": ("four", 100),  # 4k is a window (4096)
    "jeff_conversation_ctx": ("half", 0),
    "models_dir": (3, '""'),
    "flint_model": ([1], None),
    "jeff_model": ({"a": 1}, None),
    "llama_image": (7, '""'),
    "gpu_device": ([0], "first"),
    "gpu_sample_interval_s": ('"0.1"', 0),
    "flint_url": (8080, "localhost:8080"),
    "jeff_url": (8081, "ftp://x"),
    "threads": ('"4"', 0),
    "flint_tools": (1, "always"),
    "sandbox_memory": (2, "2 gigs"),
    "sandbox_cpus": ('"2"', 0),
    "sandbox_pids": ('"256"', 1),
    "sandbox_repo_size": (2, "100k"),
    "diff_limit": ([1], "512"),
    "flint_hf": (3, "gpt-oss-20b"),
    "jeff_hf": (["o/r"], "o/r:Q8 0"),
    "model_cache": (1, None),
    "fixtures_root": (1, None),
    "cpu_models": (True, "big"),
    "cpu_model": (1, "qwen2.5-coder-7b"),
    "jeff_cpu_model": (1, "qwen3-0.6b"),
    "server_stall_limit_s": ('"10"', -1),
    "server_wait_s": ('"3m"', -1),
    "servers_shared": ('"yes"', None),
    "shard": (3, '"3/2"'),
    "workers": ('"two"', 0),
    "gpu_devices": (0, "[]"),
    "flint_server_args": ("{a: 1}", '"-c 2048"'),  # range: a flag the bench sets itself
    "jeff_server_args": (3, "[--reasoning, 'off']"),
}


def test_every_setting_has_wrong_values_below() -> None:
    assert sorted(WRONG) == sorted(SETTINGS)


# Booleans and free text have no range: None above, and no case here.
CASES = [
    (key, kind, value)
    for key, pair in sorted(WRONG.items())
    for kind, value in zip(("type", "range"), pair, strict=True)
    if value is not None
]


@pytest.mark.parametrize(("key", "kind", "value"), CASES)
def test_a_wrong_value_is_one_line_naming_key_value_and_what_is_allowed(
    tmp_path: Path, key: str, kind: str, value: object
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, f"{key}: {value}\n"), {})
    message = str(caught.value)
    assert "\n" not in message and key in message, message
    assert "is not allowed" in message or "unknown" in message or "must" in message, message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ctxs: [4096]\n", "unknown setting 'ctxs'"),
        ("presets: [part4]\n", "unknown preset 'part4': choose from part2, clearing, part3"),
        ("ctx: [4096, 128]\n", r"ctx\[1\] = 128 is not allowed: input should be greater than or equal to 256"),
        ("reps: '3'\n", "reps = '3' is not allowed: input should be a valid integer"),
        ("use_jeff: 'no'\n", "use_jeff = 'no' is not allowed: input should be a valid boolean"),
        ("ctx: [4096\n", "not valid YAML"),
        ("- just a list\n", "must hold a mapping"),
    ],
)
def test_bad_settings_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text), {})


def test_yaml_numbers_are_accepted_where_a_name_is_meant(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "gpu_device: 1\nclear_at: 1\nrun_timeout_s: 60\n"), {})
    assert (config.gpu_device, config.clear_at, config.run_timeout_s) == ("1", 1.0, 60.0)


def test_the_repository_bench_yaml_and_experiments_load() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in [root / "bench.yaml", *sorted((root / "experiments").glob("*.yaml"))]:
        assert load_config(path, {}).matrix(), path
    article = load_config(root / "experiments" / "article-part3.yaml", {})
    assert len(article.matrix()) == 5 and article.reps == 3


def test_the_compose_variables_override_the_file_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "models_dir: ./models\nflint_model: a.gguf\njeff_model: b.gguf\n")
    monkeypatch.setenv("MODELS_DIR", "/srv/models")
    monkeypatch.setenv("FLINT_MODEL", "coder.gguf")
    monkeypatch.setenv("LLAMA_IMAGE", "ghcr.io/ggml-org/llama.cpp:server-cuda-b7786")
    monkeypatch.setenv("JEFF_MODEL", "")  # empty: not set
    config = load_config(path, {})
    assert config.models_dir == "/srv/models" and config.flint_model == "coder.gguf"
    assert config.jeff_model == "b.gguf" and config.llama_image.endswith("-b7786")


@pytest.mark.parametrize("key", ["flint_url", "gpu_device", "reps", "ctx"])
def test_every_setting_comes_from_the_command_line_then_the_environment_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    """One rule for every setting (FLINT_URL used to lose to bench.yaml while GPU_DEVICE won)."""
    file, environment, command_line = {
        "flint_url": ("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"),
        "gpu_device": ("1", "2", "3"),
        "reps": (1, 2, 3),
        "ctx": ([1024], [2048], [4096]),
    }[key]
    path = write(tmp_path, yaml.safe_dump({key: file}))
    assert getattr(load_config(path, {}), key) == file
    text = ",".join(map(str, environment)) if isinstance(environment, list) else str(environment)
    monkeypatch.setenv(f"AGENTBENCH_{key.upper()}", text)
    assert getattr(load_config(path, {}), key) == environment
    assert getattr(load_config(path, {key: command_line}), key) == command_line


def test_the_old_names_are_aliases_and_the_prefixed_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "flint_url: http://127.0.0.1:1\ngpu_device: '1'\n")
    monkeypatch.setenv("FLINT_URL", "http://127.0.0.1:2")
    monkeypatch.setenv("GPU_DEVICE", "2")
    config = load_config(path, {})
    assert (config.flint_url, config.gpu_device) == ("http://127.0.0.1:2", "2")
    monkeypatch.setenv("AGENTBENCH_GPU_DEVICE", "GPU-3")
    assert load_config(path, {}).gpu_device == "GPU-3"


def test_environment_values_are_read_as_their_settings_type(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in {"PRESETS": "part2,late", "RESUME": "true", "CLEAR_AT": "0.6", "SAMPLING": "{seed: 7}"}.items():
        monkeypatch.setenv(f"AGENTBENCH_{name}", text)
    monkeypatch.setenv("AGENTBENCH_OUT", "")  # empty: not set
    config = load_config(None, {})
    assert (config.presets, config.resume, config.clear_at, config.sampling) == (
        ["part2", "late"],
        True,
        0.6,
        {"seed": 7},
    )
    assert config.out is None
    monkeypatch.setenv("AGENTBENCH_REPS", "three")
    with pytest.raises(
        ConfigError, match=r"^\$AGENTBENCH_REPS: reps = 'three' is not allowed: input should be a valid"
    ):
        load_config(None, {})


def test_an_explicit_ctx_from_the_environment_replaces_the_files_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "groups:\n  - {presets: [part2], ctx: [8192]}\n")
    assert load_config(path, {}).matrix() == [("todo_repo", "part2", 8192)]
    monkeypatch.setenv("AGENTBENCH_CTX", "2048")
    assert load_config(path, {}).matrix() == [("todo_repo", "part3", 2048)]


def test_a_window_llama_server_would_serve_larger_is_refused_at_once_naming_the_sizes_it_serves() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(None, {"ctx": [4096, 4000]})
    assert str(refused.value) == (
        "the command line: ctx[1] = 4000 is not allowed: llama-server serves windows in multiples of 256: choose "
        "3840 or 4096"
    )
    assert load_config(None, {"ctx": [4352]}).ctx == [4352]


def test_a_wrong_value_from_the_file_is_blamed_on_the_file(tmp_path: Path) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text("reps: 0\n")
    with pytest.raises(ConfigError, match=f"^{config}: reps = 0"):
        load_config(config, {})
    with pytest.raises(ConfigError, match="^the command line: reps = 0"):
        load_config(None, {"reps": 0})


def test_the_repository_may_take_at_most_half_the_sandbox_memory() -> None:
    """Its tmpfs pages count against the memory limit: filling a repository as large as the memory got the agent
    killed for memory instead of refused a write (issue 19)."""
    assert load_config(None, {}).sandbox_repo_size == "512m"
    assert load_config(None, {"sandbox_repo_size": "1g"}).sandbox_repo_size == "1g"  # half of the default 2g
    with pytest.raises(ConfigError, match="sandbox_repo_size 2g is more than half of sandbox_memory 2g"):
        load_config(None, {"sandbox_repo_size": "2g"})


def test_the_summaries_matrix_and_its_predictions_load() -> None:
    root = Path(__file__).resolve().parents[2]
    matrix = load_config(root / "experiments" / "summaries.yaml", {}).matrix()
    assert len(matrix) == 2 * 6 * 3  # two fixtures, six presets (jeff-first among them), three windows
    assert {preset for _, preset, _ in matrix} >= {"summary", "summary-jeff", "hybrid", "jeff-first"}
    assert len(load_predictions(root / "predictions-summaries.yaml")) == 7
