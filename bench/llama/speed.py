"""A server's own prompt and generation speed on this build and hardware, measured once per server start.

Two plain /completion requests with the cache off: a short probe, then a prompt sized to take about half a second
at the probe's speed (at most half the window; none when that is no longer than the probe, as on a small CPU), each
generating GEN_TOKENS tokens. The server's timings say how fast it computed them (prompt_per_second,
predicted_per_second); the faster of the two is kept (a floor is the best the hardware does, and a longer prompt
computes faster per token). The grammar is one of the request's own (plain words, EOS ignored), so a server-wide
grammar (forced tool calls) cannot end the answer early. This is the calibration the hardware floor of a run is
computed from (bench/measure/time_split.py).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from bench import http_client
from bench.llama.api import erase_slot
from bench.measure.time_split import Speeds

log = logging.getLogger(__name__)
# Half a second is past a GPU's small-batch regime (thousands of tokens) and is what a CPU run pays per server start.
PROBE_TOKENS, GEN_TOKENS, TARGET_S = 128, 16, 0.5
FILLER = "The quick brown fox jumps over the lazy dog while the tests run again. "
GRAMMAR = "root ::= [a-z ]+"
TIMEOUT = httpx.Timeout(300.0, connect=3.0)


def measure_speeds(url: str, ctx: int) -> Speeds | None:
    """The server's speeds, or None (with the reason logged) when it could not be measured."""
    try:
        with http_client.client(timeout=TIMEOUT) as client:
            filler = _tokens(client, url, FILLER * 64)
            probe = _complete(client, url, _prompt(filler, min(PROBE_TOKENS, ctx // 2)))
            size = int(min(ctx // 2, max(PROBE_TOKENS, probe.prompt_tps * TARGET_S)))
            sized = _complete(client, url, _prompt(filler, size)) if size > PROBE_TOKENS else probe
            timed = Speeds(max(probe.prompt_tps, sized.prompt_tps), max(probe.gen_tps, sized.gen_tps))
    except (httpx.HTTPError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        log.warning("could not measure the speed of %s (%s): runs get no floor_s", url, e)
        return None
    finally:
        erase_slot(url)  # the measurement leaves nothing in the cache a run could reuse
    log.debug("%s: %.1f prompt tokens/s, %.1f generated tokens/s", url, timed.prompt_tps, timed.gen_tps)
    return timed


def _tokens(client: httpx.Client, url: str, text: str) -> list[int]:
    response = client.post(url.rstrip("/") + "/tokenize", json={"content": text})
    response.raise_for_status()
    return [int(t) for t in response.json()["tokens"]]


def _prompt(filler: list[int], size: int) -> list[int]:
    return (filler * (size // max(1, len(filler)) + 1))[: max(1, size - GEN_TOKENS)]


def _complete(client: httpx.Client, url: str, prompt: list[int]) -> Speeds:
    body: dict[str, Any] = {
        "prompt": prompt,
        "n_predict": GEN_TOKENS,
        "ignore_eos": True,
        "cache_prompt": False,
        "temperature": 0.0,
        "grammar": GRAMMAR,
    }
    response = client.post(url.rstrip("/") + "/completion", json=body)
    response.raise_for_status()
    timings = response.json()["timings"]
    return Speeds(float(timings["prompt_per_second"]), float(timings["predicted_per_second"]))
