"""HTTP client for llama-server: /props at start, /v1/chat/completions per step, and what each failure means.

Failures are sorted by what the loop should do about them (shapes measured on the pinned build: docs/agent.md):

    ServerError            base: `status` (None when no HTTP answer came), `type`, `message`
      ContextOverflow      400 exceed_context_size_error: the prompt does not fit; clear and retry, or stop
      UnparsedOutput       500 whose message says the model's output could not be parsed: a cut answer
                           (every wording found in llama.cpp's sources: agent/parse_failures.py)
      RequestRejected      any other 4xx: sending the same request again cannot help
      TransportError       no usable answer (refused, reset, timeout, 5xx, non-JSON, truncated or malformed
                           body): retry

`timeout` bounds each request whole, from connecting to the last byte of the answer (agent/http_call.py). An
answer is usable only in the shape the API promises: a JSON object nested at most MAX_NESTING deep, of at most
MAX_VALUES values (counted before it is decoded, which is what a body of millions of tiny values costs), with
choices[0].message an object whose content and reasoning_content are text or null and whose tool_calls is a list
or null. Anything else is a `bad_body` transport error that says which part was wrong. `usage` and `timings` are
kept as sent, whatever they are: the loop reads numbers from them only where they are numbers.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.http_call import CallFailed, call
from agent.parse_failures import is_parse_failure

MAX_NESTING = 64  # the API's answers are about 6 deep; arguments sent as an object may add a few levels
MAX_VALUES = 100_000  # the API's answers hold a few dozen values outside their strings
STRUCTURAL = (b",", b"[", b"{")  # outside strings, each adds at most one value
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included (linear: no nesting)


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
    usage: Any  # usually an object; whatever the server sent
    timings: Any


def read_props(base_url: str, timeout: float = 10.0) -> Props:
    """The window size and model of the server at base_url; SetupError naming the URL when that fails."""
    url = base_url.rstrip("/") + "/props"
    try:
        document = _decode(_request(url, None, timeout), url)
    except ServerError as e:
        raise SetupError(f"cannot read {url} ({e.message}): start llama-server there, or use the right URL") from e
    return props_from(document, url)


def props_from(document: object, url: str) -> Props:
    """The Props in a /props document; SetupError when it is not one (the bench reads /props with this too)."""
    settings = document.get("default_generation_settings") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not isinstance(settings, dict) or "n_ctx" not in settings:
        raise SetupError(f"{url} has no default_generation_settings.n_ctx: is this a llama-server?")
    n_ctx = settings["n_ctx"]
    if not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx <= 0:
        shown = json.dumps(n_ctx)[:40]
        raise SetupError(f"{url} gives the window (n_ctx) as {shown}, not a positive whole number: check the server")
    caps = document.get("chat_template_caps")
    supports = caps.get("supports_tool_calls") if isinstance(caps, dict) else None
    return Props(
        n_ctx=n_ctx,
        model=str(document.get("model_alias") or document.get("model_path") or ""),
        build=str(document.get("build_info") or ""),
        supports_tool_calls=supports if isinstance(supports, bool) else None,
    )


class ChatClient:
    """POSTs chat requests to one server, retrying transport failures with a doubling pause."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        retries: int = 0,
        retry_delay: float = 1.0,
        article_parse_rule: bool = False,
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.timeout = timeout
        self.retries = retries
        self.retry_delay = retry_delay
        self.article_parse_rule = article_parse_rule  # which 500s are cut answers (agent/parse_failures.py)

    def chat(self, body: dict[str, Any], on_error: Callable[[ServerError, int], None] | None = None) -> Reply:
        """One answer. Every transport failure is reported to on_error(error, attempt) before the retry."""
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = _request(self.url, body, self.timeout, self.article_parse_rule)
                return _parse_reply(_decode(raw, self.url))
            except TransportError as e:
                if on_error is not None:
                    on_error(e, attempt)
                if attempt > self.retries:
                    raise
                time.sleep(self.retry_delay * 2 ** (attempt - 1))


def _request(url: str, body: dict[str, Any] | None, timeout: float, article_parse_rule: bool = False) -> bytes:
    """The body of a 2xx answer; an HTTP error or no answer becomes the ServerError the loop acts on."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    try:
        answer = call(url, data, timeout)
    except CallFailed as e:
        raise TransportError(None, e.kind, e.message) from None
    if answer.status >= 400:
        raise _classify_http_error(answer.status, _error_object(answer.body), article_parse_rule)
    return answer.body


def _error_object(raw: bytes) -> dict[str, Any]:
    """The `error` object of an error answer, or {} when the body is not one."""
    try:
        body = _loads(raw)
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _classify_http_error(status: int, error: dict[str, Any], article_parse_rule: bool = False) -> ServerError:
    type_ = str(error.get("type") or "http_error")
    message = str(error.get("message") or f"HTTP {status}")
    extra: dict[str, Any] = {k: error[k] for k in ("n_prompt_tokens", "n_ctx") if k in error}
    if type_ == "exceed_context_size_error":
        return ContextOverflow(status, type_, message, extra)
    if is_parse_failure(status, message, article=article_parse_rule):
        return UnparsedOutput(status, type_, message)
    if 400 <= status < 500:
        return RequestRejected(status, type_, message)
    return TransportError(status, type_, message)


def _loads(raw: bytes) -> object:
    """JSON, nested at most MAX_NESTING deep and of at most MAX_VALUES values; ValueError otherwise (also for what
    Python's parser cannot take). The values are counted before decoding, outside strings (each `,`, `[` and `{`
    adds at most one): 8 MB of `[],` would decode into two million lists."""
    if _values(raw) > MAX_VALUES:
        raise ValueError(f"more than {MAX_VALUES} values")
    try:
        document = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels") from None
    if _nesting(document) > MAX_NESTING:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels")
    return document


def _values(raw: bytes) -> int:
    """At least how many values `raw` holds, counted without decoding it (at most MAX_VALUES + 1 strings are
    looked at): its strings, and each `,`, `[` and `{` outside them."""
    strings, inside = 0, 0
    for string in JSON_STRING.finditer(raw):
        strings += 1
        if strings > MAX_VALUES:
            break
        inside += sum(raw.count(c, string.start(), string.end()) for c in STRUCTURAL)
    return max(strings, sum(raw.count(c) for c in STRUCTURAL) - inside)


def _nesting(document: object) -> int:
    """How deep lists and objects are nested, counted without recursion."""
    deepest = 0
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            if depth <= MAX_NESTING:
                pending.extend((child, depth + 1) for child in children)
    return deepest


def _decode(raw: bytes, url: str) -> dict[str, Any]:
    try:
        document = _loads(raw)
    except ValueError as e:  # UnicodeDecodeError is one too
        raise TransportError(200, "bad_body", f"{url}: the answer is not usable JSON ({e}): {raw[:80]!r}") from None
    if not isinstance(document, dict):
        raise TransportError(200, "bad_body", f"{url}: the answer is JSON but not an object")
    return document


def _parse_reply(document: dict[str, Any]) -> Reply:
    choices = document.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise TransportError(200, "bad_body", "the answer has no choices[0].message object")
    for key, kinds in (("content", (str,)), ("reasoning_content", (str,)), ("tool_calls", (list,))):
        if message.get(key) is not None and not isinstance(message[key], kinds):
            expected = "text" if kinds == (str,) else "a list"
            raise TransportError(200, "bad_body", f"choices[0].message.{key} is neither {expected} nor null")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise TransportError(200, "bad_body", "choices[0].finish_reason is neither text nor null")
    return Reply(message, finish, document.get("usage"), document.get("timings"))
