"""What Flint's prompt cache can reuse, read from how the server was started (bench/llama/reuse.py), and its
measured speeds (bench/llama/speed.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import ROOT
from bench.containers.engine import docker_client
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.llama.reuse import DEFAULTS, ReuseSettings, from_command, of_container, of_process
from bench.llama.speed import measure_speeds
from bench.ownership import Ownership
from bench.testing import fake_llama


def test_the_command_line_wins_over_the_environment_and_unset_ones_are_the_builds_defaults() -> None:
    assert from_command([]) == ReuseSettings(**DEFAULTS)
    args = ["-m", "x.gguf", "--cache-ram", "0", "--swa-full", "-ctxcp=4"]
    env = {"LLAMA_ARG_CACHE_RAM": "512", "LLAMA_ARG_CACHE_REUSE": "256"}
    assert from_command(args, env) == ReuseSettings(swa_full=True, ctx_checkpoints=4, cache_reuse=256, cache_ram_mib=0)
    assert from_command([], {"LLAMA_ARG_SWA_FULL": "1"}).swa_full is True


def test_the_checkpoint_spacing_and_the_idle_slots_cache_are_read_in_every_spelling() -> None:
    assert (DEFAULTS["checkpoint_min_step"], DEFAULTS["cache_idle_slots"]) == (8192, True)  # b11434's --help
    settings = from_command(["-cms", "512", "--no-cache-idle-slots"])
    assert (settings.checkpoint_min_step, settings.cache_idle_slots) == (512, False)
    env = {"LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT": "0", "LLAMA_ARG_CACHE_IDLE_SLOTS": "false"}
    assert (from_command([], env).checkpoint_min_step, from_command([], env).cache_idle_slots) == (0, False)
    assert from_command(["--cache-idle-slots"], env).cache_idle_slots is True  # the command line wins
    assert from_command(["--checkpoint-min-step", "2048"]).checkpoint_min_step == 2048


@pytest.mark.usefixtures("child_processes")
def test_a_running_process_is_read_from_proc() -> None:
    flags = ["--ctx-checkpoints", "3", "--cache-reuse", "128"]
    env = {**os.environ, "LLAMA_ARG_CACHE_RAM": "64"}
    code = "import time; print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, *flags], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"  # running, its arguments in place
        assert of_process(child.pid) == ReuseSettings(False, 3, 128, 64)
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert of_process(child.pid) is None  # gone: not known


def test_speeds_come_from_the_servers_own_timings_and_a_server_without_them_has_none() -> None:
    with fake_llama.FakeLlama() as flint:
        speeds = measure_speeds(flint.url, 4096)
        assert ("POST", "/slots/0?action=erase") in flint.hits  # nothing of the calibration stays in the cache
    assert speeds is not None and speeds.prompt_tps == 1_000_000 and speeds.gen_tps == 100_000
    assert measure_speeds("http://127.0.0.1:9", 4096) is None


@pytest.mark.docker
def test_a_containers_settings_are_read_from_the_engine() -> None:
    """compose's servers: the settings come from the container's arguments and environment, as Docker reports them."""
    client = docker_client()
    image = ensure_sandbox_image(client, ROOT)
    args = ["sh", "-c", "sleep 30", "sh", "--swa-full", "--cache-ram", "0", "--ctx-checkpoints", "8"]
    labels = BenchNames(Ownership.new().instance).labels("reuse-test")
    container = client.containers.run(
        image, args, detach=True, environment={"LLAMA_ARG_CACHE_REUSE": "64"}, labels=labels, network_mode="none"
    )
    try:
        assert of_container(client, container.id) == ReuseSettings(True, 8, 64, 0)
    finally:
        container.remove(force=True)
    assert of_container(client, container.id) is None
