"""A worker asked to stop (bench/stopping.py) while it waits for a container, with the real Docker engine: it raises
the stop within a second or so, and the container it waited for is gone (killed and removed), not left running."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest

from bench.containers.engine import docker_client, run_container
from bench.containers.images import DEFAULT_SANDBOX_BASE, base_image
from bench.containers.names import BenchNames
from bench.ownership import new_instance_id
from bench.stopping import Stop, stoppable

pytestmark = pytest.mark.docker


def test_a_stop_asked_of_a_worker_removes_the_container_it_waits_for() -> None:
    client = docker_client()
    labels = BenchNames(new_instance_id()).labels("sandbox")
    owned = {"label": [f"{key}={value}" for key, value in labels.items()]}
    stop, raised = Stop(), []

    def worker() -> None:
        with stoppable(stop):
            try:  # the base image is enough: this is about the wait, not the sandbox
                run_container(
                    client, 120, image=base_image(DEFAULT_SANDBOX_BASE), command=["sleep", "60"], labels=labels
                )
            except BaseException as e:  # noqa: BLE001 - what the worker raised is the test's subject
                raised.append(e)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not client.containers.list(filters=owned):  # running
        assert time.monotonic() < deadline and thread.is_alive(), raised
        time.sleep(0.1)
    asked = time.monotonic()
    stop.ask(KeyboardInterrupt)
    thread.join(60)
    assert [type(e) for e in raised] == [KeyboardInterrupt] and time.monotonic() - asked < 15
    left: list[Any] = client.containers.list(all=True, filters=owned)
    assert left == []
    gc.collect()  # what the stop left unreachable is collected within this test, not in a later one
