"""A stand-in Docker engine on a unix socket (DOCKER_HOST=unix://...): it answers the ping, the version and `docker
info` with a recorded host's answer (data/docker-info-*.txt), and nothing else, so a bench started against it sees
that host's runtimes (the NVIDIA Container Toolkit or not) and creates nothing."""

from __future__ import annotations

import json
import re
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from host_matrix.recorded import records

VERSION = {"ApiVersion": "1.41", "MinAPIVersion": "1.12", "Version": "20.10.24", "Os": "linux", "Arch": "amd64"}


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    info: dict[str, Any]
    asked: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def address_string(self) -> str:  # a unix socket has no client address to print
        return "docker-client"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = re.sub(r"^/v[\d.]+", "", self.path.split("?")[0])
        self.server.asked.append(path)
        if path == "/_ping":
            self._send(200, b"OK", "text/plain")
        elif path == "/version":
            self._send(200, json.dumps(VERSION).encode())
        elif path == "/info":
            self._send(200, json.dumps(self.server.info).encode())
        else:
            self._send(404, json.dumps({"message": f"the stand-in engine has no {path}"}).encode())

    do_HEAD = do_GET

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class DockerEngine:
    """`with DockerEngine(socket, "docker-info-plain.txt") as engine:` then DOCKER_HOST=engine.host."""

    def __init__(self, socket: Path, record: str) -> None:
        self.socket = socket
        self.server = _Server(str(socket), _Handler)
        self.server.info = json.loads(records(record)[0])
        self.server.asked = []

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def asked(self) -> list[str]:
        return self.server.asked

    def __enter__(self) -> DockerEngine:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
