"""Test-suite wiring: markers for the real parts, and what happens when a real part is missing.

A test marked `llama`, `docker`, `compose` or `binutils` needs the real thing. When it is missing, the test is skipped
with the reason locally, but under CI (CI=true) it FAILS with the reason: a broken install step must not hide behind
a green run. `gpu` tests run only where NVML finds a device (or with --run-gpu); elsewhere they are deselected.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-gpu", action="store_true", help="run tests marked gpu even when NVML finds no device")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@functools.cache
def llama_missing() -> str | None:
    from bench.errors import PrerequisiteError
    from bench.servers.binaries import find_llama_server, find_small_model, llama_env

    try:
        server = find_llama_server()
        find_small_model()
    except PrerequisiteError as e:
        return str(e)
    probe = subprocess.run([str(server), "--version"], env=llama_env(server), capture_output=True, timeout=60)
    if probe.returncode != 0:
        return f"{server} --version failed: {probe.stderr.decode(errors='replace').strip()[-300:]}"
    return None


@functools.cache
def docker_missing() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        client.close()
    except Exception as e:  # any failure to reach the engine means "not available"
        return f"no Docker engine answers ({type(e).__name__}: {str(e)[:200]}); start dockerd"
    return None


@functools.cache
def compose_missing() -> str | None:
    missing = docker_missing()
    if missing:
        return missing
    from bench.servers.compose import compose_command

    try:
        compose_command()
    except Exception as e:
        return str(e)
    return None


@functools.cache
def binutils_missing() -> str | None:
    missing = [tool for tool in ("as", "objdump") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found: apt-get install binutils" if missing else None


@functools.cache
def gpu_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return count > 0
    except Exception:
        return False


REQUIREMENTS = {
    "llama": llama_missing,
    "docker": docker_missing,
    "compose": compose_missing,
    "binutils": binutils_missing,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-gpu") or gpu_present():
        return
    keep = [item for item in items if item.get_closest_marker("gpu") is None]
    dropped = [item for item in items if item.get_closest_marker("gpu") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, check in REQUIREMENTS.items():
        if item.get_closest_marker(marker) is None:
            continue
        reason = check()
        if reason is None:
            continue
        if in_ci():
            pytest.fail(f"[{marker}] prerequisite missing under CI: {reason}", pytrace=False)
        pytest.skip(f"[{marker}] {reason}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"CI={os.environ.get('CI', '')!r}: missing prerequisites {'fail' if in_ci() else 'skip'}"]
    lines.append(f"docker-compose: {shutil.which('docker-compose') or 'absent'}")
    return lines
