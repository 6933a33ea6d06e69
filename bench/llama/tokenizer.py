"""A chat request's prompt as Flint's own server turns it into tokens: /apply-template renders the messages with the
server's chat template, /tokenize splits the text as a chat request's prompt is split (special tokens added and
parsed, as llama-server's chat path does). Never a guess from characters: the counts are the server's.

Renderings are kept by request and tokens by rendered text, so the same prompt is rendered and tokenized once; one
httpx client, explicit timeouts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import httpx

from bench import http_client
from bench.errors import PrerequisiteError

Message = dict[str, Any]
TIMEOUT = httpx.Timeout(30.0, connect=3.0)
# Fields of a chat request that do not change the rendering; left out so that rendering never depends on them.
NOT_RENDERED = ("stream", "stream_options", "temperature", "seed", "top_p", "top_k", "min_p", "max_tokens", "n_predict")


class ServerTokenizer:
    """Tokens of chat prompts, from the llama-server at `url`."""

    def __init__(self, url: str, client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self.client = client or http_client.client(timeout=TIMEOUT)
        self.by_text: dict[str, list[int]] = {}  # tokens by the rendered text's hash
        self.by_request: dict[str, str] = {}  # rendered text by the request's hash
        self.calls = 0

    def prompt(
        self, body: dict[str, Any], messages: Sequence[Message] | None = None, *, ends: bool = False
    ) -> list[int]:
        """The tokens of `body`'s prompt, or of the same request holding `messages` instead. ends=True renders the
        messages as history only, without the generation prompt that opens the model's answer."""
        fields = {key: value for key, value in body.items() if key not in NOT_RENDERED}
        if messages is not None:
            fields["messages"] = list(messages)
        if ends:
            fields["add_generation_prompt"] = False
        key = _key(json.dumps(fields, sort_keys=True))
        if key not in self.by_request:
            text = self._post("/apply-template", fields).get("prompt")
            if not isinstance(text, str):
                raise PrerequisiteError(f"{self.url}/apply-template answered without a prompt: is this a llama-server?")
            self.by_request[key] = text
        return self.tokens(self.by_request[key])

    def tokens(self, text: str) -> list[int]:
        key = _key(text)
        if key not in self.by_text:
            answer = self._post("/tokenize", {"content": text, "add_special": True, "parse_special": True})
            tokens = answer.get("tokens")
            if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
                raise PrerequisiteError(f"{self.url}/tokenize answered without a list of token ids")
            self.by_text[key] = tokens
        return self.by_text[key]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        try:
            response = self.client.post(self.url + path, content=json.dumps(body))
        except httpx.HTTPError as e:
            raise PrerequisiteError(f"{self.url}{path} did not answer ({e}): is Flint's server still running?") from e
        if response.status_code != 200:
            raise PrerequisiteError(f"{self.url}{path} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            answer = response.json()
        except ValueError as e:
            raise PrerequisiteError(f"{self.url}{path} answered with something other than JSON") from e
        if not isinstance(answer, dict):
            raise PrerequisiteError(f"{self.url}{path} answered with JSON that is not an object")
        return answer

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> ServerTokenizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
