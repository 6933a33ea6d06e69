"""The threads of CPU servers: all cores but one by default, and a warning when a setting takes every core."""

from __future__ import annotations

import logging

import pytest

from bench import ROOT
from bench.config import BenchConfig
from bench.servers.base import default_threads, threads_warning
from bench.servers.compose import ComposeServers


def test_a_setting_of_every_core_or_more_is_warned_about() -> None:
    assert threads_warning(None, cores=2) is None and threads_warning(1, cores=2) is None
    warning = threads_warning(2, cores=2)
    assert warning is not None and warning.startswith("threads 2 is at least this machine's 2 cores")
    assert warning.endswith("leave one core free: threads 1, or unset it")
    assert threads_warning(16, cores=8) is not None
    assert threads_warning(default_threads()) is None or default_threads() == 1  # the default leaves one core


def test_cpu_servers_say_it_when_they_are_made(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        ComposeServers(BenchConfig(threads=1024), gpu=False, checkout=ROOT)
    assert "threads 1024 is at least this machine's" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        ComposeServers(BenchConfig(threads=1024), gpu=True, checkout=ROOT)  # a GPU server's threads only feed the GPU
    assert "threads 1024" not in caplog.text
