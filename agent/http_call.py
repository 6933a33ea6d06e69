"""One HTTP request whose timeout bounds all of it: connecting, sending, and the answer to its last byte.

A socket timeout only limits each read: a server that sends one byte a second never trips it. So a timer shuts the
socket down when the time is up, which ends whatever read is waiting; the answer is then a timeout. The body is
read up to MAX_BODY_BYTES, so a server cannot fill the agent's memory either.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

MAX_BODY_BYTES = 32 * 1024 * 1024  # a whole 128K-token answer is about 1 MB
CHUNK_BYTES = 65_536


class CallFailed(Exception):
    """No complete HTTP answer. `kind`: timeout, connection or bad_body; the message names the URL."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def call(url: str, body: bytes | None, timeout: float) -> Answer:
    """GET (no body) or POST `body` as JSON; the status and whole body, or CallFailed within `timeout` seconds."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CallFailed("connection", f"{url}: not an http:// URL")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=timeout)
    expired = threading.Event()
    timer = threading.Timer(timeout, _expire, args=(connection, expired))
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    try:
        connection.connect()
        if expired.is_set():
            raise TimeoutError
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request("POST" if body is not None else "GET", path, body=body, headers=headers)
        response = connection.getresponse()
        return Answer(response.status, _read_body(response, url))
    except (OSError, http.client.HTTPException, CallFailed) as e:
        if expired.is_set() or time.monotonic() - started >= timeout:  # the timer cut it short
            raise CallFailed("timeout", f"{url}: no complete answer within {timeout:g} s") from None
        if isinstance(e, CallFailed):
            raise
        if isinstance(e, http.client.IncompleteRead):
            raise CallFailed("bad_body", f"{url}: body cut off after {len(e.partial)} bytes") from None
        raise CallFailed("connection", f"{url}: {type(e).__name__}: {e}") from None
    finally:
        timer.cancel()
        connection.close()


def _read_body(response: http.client.HTTPResponse, url: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(CHUNK_BYTES):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise CallFailed("bad_body", f"{url}: the answer is larger than {MAX_BODY_BYTES // 2**20} MiB")
        chunks.append(chunk)
    if response.length:  # http.client returns a short body without a word when Content-Length promised more
        raise CallFailed("bad_body", f"{url}: body cut off after {size} bytes")
    return b"".join(chunks)


def _expire(connection: http.client.HTTPConnection, expired: threading.Event) -> None:
    expired.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
