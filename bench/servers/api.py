"""llama-server's HTTP API as the bench uses it: /props, /health, /metrics and the slot-erase action."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable

from agent.server import Props, SetupError
from agent.server import read_props as agent_read_props
from bench.errors import PrerequisiteError, ServerStartError


def read_props(base_url: str, timeout: float = 10.0) -> Props:
    """What /props says (window, model, build), read the way the agent reads it; ServerStartError when it cannot."""
    try:
        return agent_read_props(base_url, timeout)
    except SetupError as e:
        raise ServerStartError(f"{base_url} does not answer as a llama-server: {e}") from e


def check_ctx(base_url: str, ctx: int, who: str) -> Props:
    """/props of a server that must serve exactly `ctx` tokens per slot (the bench measures at that size)."""
    props = read_props(base_url)
    if props.n_ctx != ctx:
        raise ServerStartError(
            f"{who} at {base_url} serves n_ctx={props.n_ctx}, not the requested {ctx}: "
            "check -c/-np and the model's training context"
        )
    return props


def wait_healthy(urls: list[str], timeout_s: float, still_starting: Callable[[], None] = lambda: None) -> bool:
    """Poll /health until every URL answers 200 (True) or the time is up (False).

    `still_starting` runs before each poll and may raise to give up early (a server process that exited).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        still_starting()
        if all(is_healthy(url) for url in urls):
            return True
        time.sleep(0.2)
    return False


def is_healthy(base_url: str, timeout: float = 2.0) -> bool:
    """True once /health answers 200 (it answers 503 while the model loads)."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/health", timeout=timeout) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> {name: value} for unlabelled samples (llama-server's counters and gauges)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or "{" in line:
            continue
        parts = line.split()
        if len(parts) >= 2:
            try:
                values[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return values


def read_metrics(base_url: str, timeout: float = 10.0) -> dict[str, float]:
    """Counters from /metrics; raises PrerequisiteError when the server runs without --metrics."""
    url = base_url.rstrip("/") + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return parse_metrics(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        if e.code == 501:
            raise PrerequisiteError(f"{url} is disabled: start llama-server with --metrics") from e
        raise


PROMPT_TOKENS_COUNTER = "llamacpp:prompt_tokens_total"


def erase_slot(base_url: str, slot: int = 0, timeout: float = 30.0) -> str | None:
    """Empty the slot's prompt cache, so a run does not reuse the previous run's prompt; returns why not, or None.

    Needs the server started with --slot-save-path (the bench's servers are); others answer 501.
    """
    url = f"{base_url.rstrip('/')}/slots/{slot}?action=erase"
    request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as e:
        hint = ": start llama-server with --slot-save-path DIR" if e.code == 501 else ""
        return f"could not empty the prompt cache of {base_url} (HTTP {e.code}){hint}"
    except (OSError, ValueError) as e:
        return f"could not empty the prompt cache of {base_url} ({e})"
