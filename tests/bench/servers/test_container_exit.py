"""A compose server that exits while loading is refused at its first check, naming it and the line of its log that
says why."""

from __future__ import annotations

from typing import Any

import pytest

from bench.errors import ServerStartError
from bench.servers.container_exit import exited, refuse_exited


class Engine:
    """The engine's answer to `inspect_container`: each container's state, as the Docker API gives it."""

    def __init__(self, states: dict[str, dict[str, Any]]) -> None:
        self.states = states
        self.asked = 0
        self.api = self

    def inspect_container(self, container: str) -> dict[str, Any]:
        self.asked += 1
        if container not in self.states:
            raise LookupError(container)  # the SDK's NotFound
        return {"State": self.states[container]}


def test_only_a_container_that_no_longer_runs_counts() -> None:
    running = {"Status": "running", "ExitCode": 0}
    assert exited(Engine({"a": running, "b": running}), {"flint": "a", "jeff": "b"}) is None
    assert exited(Engine({"a": running}), {"flint": "a", "jeff": "gone"}) is None  # removed: the wait reports it
    engine = Engine({"a": running, "b": {"Status": "exited", "ExitCode": 1}})
    assert exited(engine, {"flint": "a", "jeff": "b"}) == ("jeff", 1)


def test_the_refusal_names_the_server_its_status_and_its_last_log_line() -> None:
    engine = Engine({"a": {"Status": "running"}})
    check = refuse_exited(engine, {"flint": "a"}, lambda role: f"{role}: loading\n{role}: failed to load model\n\n")
    check()
    engine.states["a"] = {"Status": "exited", "ExitCode": 1}
    check()  # within a second of the last look: the engine is not asked again
    assert engine.asked == 1
    with pytest.raises(
        ServerStartError, match=r"flint exited with status 1 while loading.*flint: failed to load model"
    ):
        refuse_exited(engine, {"flint": "a"}, lambda role: f"{role}: failed to load model\n")()


def test_a_driver_that_cannot_load_the_kernels_is_named_with_the_fix() -> None:
    log = "ggml-cuda.cu:97: CUDA error\nCUDA error: device kernel image is invalid\n[New LWP 5559]\n"
    engine = Engine({"a": {"Status": "exited", "ExitCode": 134}})
    with pytest.raises(ServerStartError) as caught:
        refuse_exited(engine, {"flint": "a"}, lambda role: log)()
    said = str(caught.value)
    assert "its log says: CUDA error: device kernel image is invalid; this driver cannot load" in said
    assert "needs driver 550.54.14 or later" in said and "\n" not in said
