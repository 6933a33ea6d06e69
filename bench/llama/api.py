"""llama-server's HTTP API as the bench uses it: /props, /health, /metrics, /slots and the slot-erase action.

All of it goes through one httpx client with explicit timeouts: a server that stops answering costs seconds, never
a hung bench. (The agent keeps its own standard-library client: it runs in a bare python3 container.)
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench import http_client, stopping
from bench.agents.article import Props, SetupError, props_from
from bench.errors import PrerequisiteError, ServerStartError

PROMPT_TOKENS_COUNTER = "llamacpp:prompt_tokens_total"
# Connecting to a local server is instant or refused; reading /props or /metrics can wait behind a busy slot.
TIMEOUT = httpx.Timeout(10.0, connect=3.0)
# Never a proxy (the servers are on this host), and a new connection per request: a kept-alive connection could
# still answer for a server whose listening socket is gone, and /health must say whether it accepts connections.
_client = http_client.client(timeout=TIMEOUT, limits=httpx.Limits(max_keepalive_connections=0))


def _url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + path


@dataclass(frozen=True)
class ServerInfo:
    """One reading of /props: what the agent reads there too, and the file the server loaded."""

    props: Props
    model_path: Path | None  # /props model_path: with -hf, the fetched file in the cache, whatever its alias


def server_info(base_url: str) -> ServerInfo:
    """What /props says (window, model, build, model file), parsed the way the agent parses it; ServerStartError
    otherwise."""
    url = _url(base_url, "/props")
    try:
        response = _client.get(url)
        response.raise_for_status()
        document = response.json()
        props = props_from(document, url)
    except (httpx.HTTPError, ValueError, SetupError) as e:
        raise ServerStartError(f"{base_url} does not answer as a llama-server: {e}") from e
    path = document.get("model_path")
    return ServerInfo(props, Path(path) if isinstance(path, str) and path else None)


def read_props(base_url: str) -> Props:
    return server_info(base_url).props


def check_ctx(base_url: str, ctx: int, who: str) -> ServerInfo:
    """/props of a server that must serve exactly `ctx` tokens per slot (the bench measures at that size)."""
    info = server_info(base_url)
    if info.props.n_ctx != ctx:
        raise ServerStartError(
            f"{who} at {base_url} serves n_ctx={info.props.n_ctx}, not the requested {ctx}: "
            "check -c/-np and the model's training context"
        )
    return info


def wait_healthy(
    urls: list[str],
    timeout_s: float,
    still_starting: Callable[[], None] = lambda: None,
    progress: Callable[[], str | None] = lambda: None,
    progress_every_s: float = 2.0,
) -> bool:
    """Poll /health until every URL answers 200 (True) or the time is up (False).

    `still_starting` runs before each poll and may raise to give up early (a server process that exited).
    `progress` says how a model download stands (None: no download); while it changes, the time limit starts
    over, so a first start that fetches a large model is waited for, and one whose download stalls is not.
    """
    deadline = time.monotonic() + timeout_s
    last_progress, next_progress = None, 0.0
    while time.monotonic() < deadline:
        still_starting()
        if all(is_healthy(url) for url in urls):
            return True
        if time.monotonic() >= next_progress:
            state, next_progress = progress(), time.monotonic() + progress_every_s
            if state is not None and state != last_progress:
                last_progress, deadline = state, time.monotonic() + timeout_s
        stopping.sleep(0.2)  # a worker's stop is seen (bench.stopping)
    return False


def is_healthy(base_url: str) -> bool:
    """True once /health answers 200 (it answers 503 while the model loads)."""
    try:
        return _client.get(_url(base_url, "/health"), timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


SLOTS_ANSWER_S = 5.0  # an idle server answers /slots at once; one that takes longer is stuck
IDLE_POLL_S = 0.5


def busy_slot(base_url: str, answer_within_s: float = SLOTS_ANSWER_S) -> str | None:
    """Why the server is not idle (a slot still processing, or /slots unanswered within `answer_within_s`: stuck),
    or None when it is idle or cannot tell (a server started with --no-slots)."""
    try:
        response = _client.get(_url(base_url, "/slots"), timeout=answer_within_s)
    except httpx.HTTPError as e:
        return f"{base_url}/slots did not answer ({type(e).__name__}): the server is stuck"
    if response.status_code in (404, 501):
        return None
    try:
        slots = response.json()
        processing = [slot.get("id") for slot in slots if slot.get("is_processing")]
    except (ValueError, TypeError, AttributeError):
        return f"{base_url}/slots answered no list of slots"
    return f"slot {processing[0]} of {base_url} is still processing a request" if processing else None


def wait_idle(urls: list[str], timeout_s: float = 30.0, poll_s: float = IDLE_POLL_S) -> str | None:
    """Wait until no slot of these servers is processing, asking every `poll_s`; why not, when `timeout_s` passes
    first or at once when one of them refuses connections: a server that is gone will not become idle (one stopped
    or busy still accepts them, and is waited for)."""
    deadline = time.monotonic() + timeout_s
    while True:
        problem = next((p for url in urls if (p := busy_slot(url))), None)
        if problem is None or time.monotonic() >= deadline or not all(accepts_connections(url) for url in urls):
            return problem
        stopping.sleep(poll_s)


def accepts_connections(base_url: str) -> bool:
    """Whether something listens at the server's address (the kernel accepts for a stopped process too)."""
    address = httpx.URL(base_url)
    try:
        socket.create_connection((address.host, address.port or 80), timeout=3.0).close()
    except OSError:
        return False
    return True


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> {name: value} for unlabelled samples (llama-server's counters and gauges).

    Values may be NaN or +Inf in that format; they are kept as such for the caller to judge.
    """
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


def read_metrics(base_url: str) -> dict[str, float]:
    """Counters from /metrics; PrerequisiteError when the server runs without --metrics, httpx.HTTPError otherwise."""
    url = _url(base_url, "/metrics")
    response = _client.get(url)
    if response.status_code == 501:
        raise PrerequisiteError(f"{url} is disabled: start llama-server with --metrics")
    response.raise_for_status()
    return parse_metrics(response.text)


def counters(base_url: str) -> dict[str, float] | None:
    """Flint's /metrics counters now, or None when they cannot be read (the row's cross-checks then say unchecked)."""
    try:
        return read_metrics(base_url)
    except (httpx.HTTPError, PrerequisiteError):
        return None


def prompt_counter(base_url: str) -> float | None:
    """Flint's llamacpp:prompt_tokens_total now, or None when it cannot be read (the row then says unchecked)."""
    return (counters(base_url) or {}).get(PROMPT_TOKENS_COUNTER)


def erase_slot(base_url: str, slot: int = 0) -> str | None:
    """Empty the slot's prompt cache, so a run does not reuse the previous run's prompt; returns why not, or None.

    Needs the server started with --slot-save-path (the bench's servers are); others answer 501.
    """
    try:
        response = _client.post(_url(base_url, f"/slots/{slot}"), params={"action": "erase"}, json={}, timeout=30.0)
    except httpx.HTTPError as e:
        return f"could not empty the prompt cache of {base_url} ({e})"
    if response.status_code == 200:
        return None
    hint = ": start llama-server with --slot-save-path DIR" if response.status_code == 501 else ""
    return f"could not empty the prompt cache of {base_url} (HTTP {response.status_code}){hint}"
