"""aider as an agent kind (bench/agents/aider.py): headless at the proxy, its window and answer limit from the run's
ctx, its offline switches; and its wrapper's verdict is the repository's tests, with the repository map's cache it
leaves in the repository removed (a fake aider stands in for it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.agents.base import AgentSettings, Place
from bench.agents.kinds import agent_kind

SETTINGS = AgentSettings("", 8192, 30, 2, 0.5, '{"temperature": 0.0}', 0, 1.0, 600.0, 30.0, 0)


def launch_at(tmp_path: Path):  # type: ignore[no-untyped-def]
    place = Place(
        sys.executable,
        str(tmp_path / "repo"),
        str(tmp_path / "TASK.md"),
        str(tmp_path / "out"),
        "http://127.0.0.1:5000",
        None,
        installed=str(tmp_path / "venv"),
    )
    return agent_kind("aider").launch(place, SETTINGS)


def test_aider_runs_one_headless_turn_at_the_proxy_with_the_runs_window(tmp_path: Path) -> None:
    launch = launch_at(tmp_path)
    argv = launch.argv
    args = argv[argv.index("--model") :]
    assert args[:6] == [
        "--model",
        "openai/flint",
        "--openai-api-base",
        "http://127.0.0.1:5000/v1",
        "--openai-api-key",
        "none",
    ]
    assert "--yes-always" in args and "--no-auto-commits" in args and "--no-analytics" in args
    assert args[args.index("--map-tokens") + 1] == "1024"  # ctx / 8
    metadata = json.loads(argv[argv.index(sys.executable, 1) + 2])
    assert metadata["openai/flint"]["max_input_tokens"] == 8192 and metadata["openai/flint"]["max_tokens"] == 2048
    settings = json.loads(argv[argv.index(sys.executable, 1) + 3])
    assert settings == [{"name": "openai/flint", "extra_params": {"temperature": 0.0, "max_tokens": 2048}}]
    # anything but the proxy goes to a closed port; the proxy itself is not proxied
    assert launch.env["HTTPS_PROXY"] == "http://127.0.0.1:9" and launch.env["NO_PROXY"] == "127.0.0.1"
    assert agent_kind("aider").version() == "0.86.2" and agent_kind("aider").dialect == "chat-completions"


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(("test_passes", "status"), [(True, 0), (False, 1)])
def test_the_wrapper_says_done_when_the_tests_pass_and_leaves_no_map_cache(
    tmp_path: Path, test_passes: bool, status: int
) -> None:
    repo, venv = tmp_path / "repo", tmp_path / "venv" / "bin"
    repo.mkdir()
    venv.mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (repo / "test_it.py").write_text(f"def test_it():\n    assert {test_passes}\n")
    fake = venv / "aider"  # what aider leaves behind: its repository map's cache
    fake.write_text(f"#!{sys.executable}\nimport os\nos.makedirs('.aider.tags.cache.v4')\n")
    fake.chmod(0o755)
    launch = launch_at(tmp_path)
    done = subprocess.run(launch.argv, cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stdout + done.stderr
    assert not list(repo.glob(".aider.tags.cache*"))
    assert (tmp_path / "out" / "aider-models.json").is_file()
