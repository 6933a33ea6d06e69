"""The bench's HTTP clients to its servers: never through a proxy (trust_env off), and one TLS context for all.

httpx builds a TLS context (the CA bundle read and parsed) for every new client, about 21 ms here, even for a plain
http:// URL. The server watch makes a client for each probe and the reprocessing split one a run, so each run's own
cost (perf/bench_cost.py) paid that several times over; the context is now made once, when first needed.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def _tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def client(**options: Any) -> httpx.Client:
    """An httpx.Client with these options (timeout, limits), no proxy from the environment, the shared TLS context."""
    return httpx.Client(trust_env=False, verify=_tls(), **options)
