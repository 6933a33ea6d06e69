"""A compose server that dies while it loads (a model that is not a GGUF, one too large for the card, a bad flag) is
seen at once, not after the whole start timeout: its container's state is read beside each /health poll.

Compose starts the servers without a restart policy, so a llama-server that exits leaves its container "exited"
with its exit code, which the engine answers in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.errors import ServerStartError
from bench.llama.load_errors import why_it_died

CHECK_EVERY_S = 1.0  # the engine is asked at most this often; /health is polled five times as often


def exited(client: Any, containers: dict[str, str]) -> tuple[str, int] | None:
    """(role, exit code) of the first server container that no longer runs, or None while all run (or are gone:
    compose removed them, which the /health wait then reports)."""
    for role, container in containers.items():
        if not container:
            continue
        try:
            state = client.api.inspect_container(container)["State"]
        except Exception:  # noqa: BLE001 - a container that vanished is not this check's to judge
            continue
        if state.get("Status") in ("exited", "dead"):
            return role, int(state.get("ExitCode") or 0)
    return None


def refuse_exited(client: Any, containers: dict[str, str], log_tail: Callable[[str], str]) -> Callable[[], None]:
    """A `still_starting` for bench.llama.api.wait_healthy: raises ServerStartError naming the server that exited, its
    exit code and the line of its log that says why (bench/llama/load_errors.py)."""
    next_check = 0.0

    def still_starting() -> None:
        nonlocal next_check
        if time.monotonic() < next_check:
            return
        next_check = time.monotonic() + CHECK_EVERY_S
        if (dead := exited(client, containers)) is not None:
            role, code = dead
            raise ServerStartError(
                f"compose server {role} exited with status {code} while loading (a model file that is not a GGUF, a"
                f" model too large for the card, a bad flag?); its log says: {why_it_died(log_tail(role))}"
            )

    return still_starting
