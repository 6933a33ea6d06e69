"""A stand-in of the Kubernetes API for the merge's wait (bench/submit/job_wait.py): the two reads it makes, the
shards Job and the list of its pods, answered as the Job controller and the scheduler would have them from what a
test says of each index: queued (its pod Pending, unschedulable for want of a card, since a time), running, or ended
with its bench's exit status. The kubelet play (tests/integration/test_k8s_pods.py) answers its merge with it; the
wait's tests (tests/bench/submit/test_job_wait.py) drive it on a clock of their own.

    shards = ShardsJob("m1-shards", 2, start=time.time())
    with serve(shards) as url:  # AGENTBENCH_KUBE_API for the merge
        shards.queued[1] = time.time()
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from bench.submit.job_wait import INDEX_ANNOTATION

# What the scheduler says of a pod that asks for a GPU on a cluster whose cards are all taken.
NO_CARD = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def stamp(seconds: float) -> str:
    """A time as the API writes it (RFC 3339, UTC, whole seconds)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ShardsJob:
    """The Indexed Job of the shards as the API reports it; a test changes the fields as the cluster moves on."""

    name: str
    shards: int
    start: float  # status.startTime, in seconds since the epoch
    namespace: str = "default"
    ended: dict[int, int] = field(default_factory=dict)  # index -> the exit status of its bench
    queued: dict[int, float] = field(default_factory=dict)  # index -> since when its pod waits for a card
    running: set[int] = field(default_factory=set)

    def job(self) -> dict[str, Any]:
        """The Job: its completed and failed indexes, and its Complete or Failed condition once every index ended."""
        done = ",".join(str(i) for i, code in sorted(self.ended.items()) if code == 0)
        failed = ",".join(str(i) for i, code in sorted(self.ended.items()) if code != 0)
        status: dict[str, Any] = {"startTime": stamp(self.start), "completedIndexes": done, "failedIndexes": failed}
        if len(self.ended) == self.shards:
            status["conditions"] = [{"type": "Failed" if failed else "Complete", "status": "True"}]
        return {"metadata": {"name": self.name, "namespace": self.namespace}, "status": status}

    def pods(self) -> list[dict[str, Any]]:
        """One pod for each index the Job has made one for, in the state the test set."""
        found = [self.pod(i, self.queued[i], queued_status()) for i in sorted(self.queued)]
        found += [self.pod(i, self.start, {"phase": "Running"}) for i in sorted(self.running)]
        return found + [self.pod(i, self.start, ended_status(code)) for i, code in sorted(self.ended.items())]

    def pod(self, index: int, created: float, status: dict[str, Any]) -> dict[str, Any]:
        meta = {
            "name": f"{self.name}-{index}-p0d",
            "namespace": self.namespace,
            "creationTimestamp": stamp(created),
            "labels": {"batch.kubernetes.io/job-name": self.name, INDEX_ANNOTATION: str(index)},
            "annotations": {INDEX_ANNOTATION: str(index)},
        }
        return {"metadata": meta, "status": status}

    def answer(self, path: str) -> dict[str, Any] | None:
        """The API's answer to a GET of `path` (with its query), None where it would answer 404."""
        url = urlsplit(path)
        if url.path == f"/apis/batch/v1/namespaces/{self.namespace}/jobs/{self.name}":
            return self.job()
        selector = parse_qs(url.query).get("labelSelector", [""])[0]
        if url.path == f"/api/v1/namespaces/{self.namespace}/pods":
            mine = selector == f"batch.kubernetes.io/job-name={self.name}"
            return {"kind": "PodList", "items": self.pods() if mine else []}
        return None


def queued_status() -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": NO_CARD}
    return {"phase": "Pending", "conditions": [condition]}


def ended_status(code: int) -> dict[str, Any]:
    terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
    return {
        "phase": "Succeeded" if code == 0 else "Failed",
        "containerStatuses": [{"name": "bench", "state": {"terminated": terminated}}],
    }


class Answering(Protocol):
    def answer(self, path: str) -> dict[str, Any] | None: ...


@dataclass
class Recorded:
    """Fixed answers by path (with its query), as an API server gave them."""

    by_path: dict[str, Any]

    def answer(self, path: str) -> dict[str, Any] | None:
        return self.by_path.get(path)


@contextmanager
def serve(api: Answering, host: str = "127.0.0.1", token: str | None = None) -> Iterator[str]:
    """The stand-in on `host` at a free port, for as long as the block runs; yields its address. With `token`, a read
    without that bearer token is refused (403), as an API server refuses an account without the RoleBinding."""

    class Answers(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                return self.reply(403, {"kind": "Status", "code": 403})
            found = api.answer(self.path)
            self.reply(
                200 if found is not None else 404, found if found is not None else {"kind": "Status", "code": 404}
            )

        def reply(self, code: int, answer: dict[str, Any]) -> None:
            body = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
