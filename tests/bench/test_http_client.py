"""The bench's HTTP clients (bench/http_client.py): no proxy from the environment, one TLS context for all."""

from __future__ import annotations

import http.server
import threading

import pytest

from bench import http_client


def test_a_client_ignores_the_environments_proxy_and_every_client_shares_one_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there: a client using it would fail
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    http_client._tls.cache_clear()
    try:
        for _ in range(3):
            with http_client.client(timeout=5) as client:
                assert client.get(f"http://127.0.0.1:{server.server_address[1]}/").status_code == 200
    finally:
        server.shutdown()
        server.server_close()
    assert http_client._tls.cache_info().misses == 1  # made once, reused by the later clients
