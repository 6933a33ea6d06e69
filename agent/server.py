"""HTTP client for llama-server: /props at start, /v1/chat/completions per step, and what each failure means.

Failures are sorted by what the loop should do about them (shapes: notes/llama-server.md §2):

    ServerError            base: `status` (None when no HTTP answer came), `type`, `message`
      ContextOverflow      400 exceed_context_size_error: the prompt does not fit; clear and retry, or stop
      UnparsedOutput       500 whose message says the model's output could not be parsed: a cut answer
                           (every wording found in llama.cpp's sources: agent/parse_failures.py)
      RequestRejected      any other 4xx: sending the same request again cannot help
      TransportError       no usable answer (refused, reset, timeout, 5xx, non-JSON or truncated body): retry
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.parse_failures import is_parse_failure


class ServerError(Exception):
    def __init__(self, status: int | None, type_: str, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.extra = extra or {}


class ContextOverflow(ServerError):
    """The prompt is larger than the window (HTTP 400 exceed_context_size_error)."""


class UnparsedOutput(ServerError):
    """The server generated an answer but could not parse it: the answer was cut mid tool call."""


class RequestRejected(ServerError):
    """The server refused the request itself; resending it unchanged would fail the same way."""


class TransportError(ServerError):
    """No usable answer came back; worth retrying after a pause."""


class SetupError(Exception):
    """The agent cannot start (for example the server is unreachable); the message is one line for the user."""


@dataclass(frozen=True)
class Props:
    """What /props says about the server."""

    n_ctx: int
    model: str
    build: str
    supports_tool_calls: bool | None


@dataclass(frozen=True)
class Reply:
    """One answer from /v1/chat/completions; usage, timings and finish_reason exactly as the server sent them."""

    message: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, Any] | None
    timings: dict[str, Any] | None


def read_props(base_url: str, timeout: float = 10.0) -> Props:
    """The window size and model of the server at base_url; SetupError naming the URL when that fails."""
    url = base_url.rstrip("/") + "/props"
    try:
        document = _decode(_request(url, None, timeout))
    except ServerError as e:
        raise SetupError(f"cannot read {url} ({e.message}): start llama-server there, or use the right URL") from e
    return props_from(document, url)


def props_from(document: object, url: str) -> Props:
    """The Props in a /props document; SetupError when it is not one (the bench reads /props with this too)."""
    try:
        if not isinstance(document, dict):
            raise TypeError("the answer is not a JSON object")
        settings = document.get("default_generation_settings") or {}
        caps = document.get("chat_template_caps") or {}
        return Props(
            n_ctx=int(settings["n_ctx"]),
            model=str(document.get("model_alias") or document.get("model_path") or ""),
            build=str(document.get("build_info") or ""),
            supports_tool_calls=caps.get("supports_tool_calls"),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SetupError(f"{url} has no default_generation_settings.n_ctx ({e!r}): is this a llama-server?") from e


class ChatClient:
    """POSTs chat requests to one server, retrying transport failures with a doubling pause."""

    def __init__(self, base_url: str, *, timeout: float, retries: int = 0, retry_delay: float = 1.0) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.timeout = timeout
        self.retries = retries
        self.retry_delay = retry_delay

    def chat(self, body: dict[str, Any], on_error: Callable[[ServerError, int], None] | None = None) -> Reply:
        """One answer. Every transport failure is reported to on_error(error, attempt) before the retry."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return _parse_reply(_decode(_request(self.url, body, self.timeout)))
            except TransportError as e:
                if on_error is not None:
                    on_error(e, attempt)
                if attempt > self.retries:
                    raise
                time.sleep(self.retry_delay * 2 ** (attempt - 1))


def _request(url: str, body: dict[str, Any] | None, timeout: float) -> bytes:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as e:
        raise _classify_http_error(e.code, _read_error_body(e)) from None
    except urllib.error.URLError as e:
        kind = "timeout" if isinstance(e.reason, TimeoutError) else "connection"
        raise TransportError(None, kind, f"{url}: {e.reason}") from None
    except TimeoutError:
        raise TransportError(None, "timeout", f"{url}: no answer within {timeout:g} s") from None
    except http.client.IncompleteRead as e:
        raise TransportError(None, "bad_body", f"{url}: body cut off after {len(e.partial)} bytes") from None
    except (ConnectionError, http.client.HTTPException) as e:
        raise TransportError(None, "connection", f"{url}: {type(e).__name__}: {e}") from None


def _read_error_body(e: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        body = json.loads(e.read().decode("utf-8", errors="replace"))
    except (OSError, ValueError, http.client.HTTPException):
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _classify_http_error(status: int, error: dict[str, Any]) -> ServerError:
    type_ = str(error.get("type") or "http_error")
    message = str(error.get("message") or f"HTTP {status}")
    extra: dict[str, Any] = {k: error[k] for k in ("n_prompt_tokens", "n_ctx") if k in error}
    if type_ == "exceed_context_size_error":
        return ContextOverflow(status, type_, message, extra)
    if is_parse_failure(status, message):
        return UnparsedOutput(status, type_, message)
    if 400 <= status < 500:
        return RequestRejected(status, type_, message)
    return TransportError(status, type_, message)


def _decode(raw: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise TransportError(200, "bad_body", f"the answer is not JSON: {raw[:80]!r}") from None
    if not isinstance(document, dict):
        raise TransportError(200, "bad_body", "the answer is JSON but not an object")
    return document


def _parse_reply(document: dict[str, Any]) -> Reply:
    try:
        choice = document["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise TransportError(200, "bad_body", "the answer has no choices[0].message") from None
    if not isinstance(message, dict):
        raise TransportError(200, "bad_body", "choices[0].message is not an object")
    return Reply(message, choice.get("finish_reason"), document.get("usage"), document.get("timings"))
