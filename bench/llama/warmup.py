"""One untimed request to each server after it starts, before the first timed run.

A CUDA server loads its kernels lazily (CUDA's lazy module loading), and one that runs PTX compiles it at first use
(cached in compose.yaml's JIT volume for the next start). Neither may land in a run's wall_s: this request makes the
server run a batch of prompt tokens (the matrix-multiply kernels of prompt processing) and a few generated tokens
(those of generation) first. The slot is emptied before every run anyway, so nothing of it carries into a run.
"""

from __future__ import annotations

import time

import httpx

from bench import http_client

# About 200 tokens of prompt: above llama.cpp's small-batch paths, so prompt processing uses its batched kernels.
PROMPT = " ".join(f"line {i}: the quick brown fox jumps over the lazy dog." for i in range(16))
GENERATED = 8
TIMEOUT_S = 600.0  # a first PTX compilation of every kernel it needs can take minutes


def warm_up(url: str, client: httpx.Client | None = None) -> tuple[float, str | None]:
    """(seconds it took, problem or None): one short chat request; a failure is reported, never raised."""
    http = client or http_client.client()
    body = {
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": GENERATED,
        "temperature": 0.0,
        "cache_prompt": False,
    }
    started = time.monotonic()
    try:
        response = http.post(url.rstrip("/") + "/v1/chat/completions", json=body, timeout=TIMEOUT_S)
        response.raise_for_status()
    except httpx.HTTPError as e:
        return time.monotonic() - started, f"warm-up request to {url} failed: {e}"
    finally:
        if client is None:
            http.close()
    return time.monotonic() - started, None


def warm_up_servers(urls: list[str | None]) -> list[str]:
    """Warm every server up; lines to print (the time each took, or why it failed)."""
    lines = []
    for url in (u for u in urls if u):
        seconds, problem = warm_up(url)
        lines.append(problem or f"warm-up request to {url}: {seconds:.1f} s (untimed)")
    return lines


def window_request(
    url: str, ctx: int, share: float = 0.75, client: httpx.Client | None = None, timeout_s: float = TIMEOUT_S
) -> int:
    """One request whose prompt fills `share` of the window (measured with /tokenize); returns its prompt tokens.

    The GPU self-check sends it between two memory readings: a long prompt is processed in full batches, which is
    when the CUDA backend's pool and cuBLAS workspaces grow."""
    http = client or http_client.client()
    try:
        sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
        tokens = http.post(url + "/tokenize", json={"content": sentence}, timeout=30).json()["tokens"]
        prompt = sentence * max(1, int(ctx * share / max(1, len(tokens))))
        body = {"prompt": prompt, "n_predict": GENERATED, "cache_prompt": False, "temperature": 0.0}
        answer = http.post(url + "/completion", json=body, timeout=timeout_s)
        answer.raise_for_status()
        return int(answer.json().get("timings", {}).get("prompt_n", 0))
    finally:
        if client is None:
            http.close()
