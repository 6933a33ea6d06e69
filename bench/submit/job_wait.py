"""How the shards of a `bench submit k8s` matrix ended, from the Indexed Job's own status: `python -m
bench.submit.job_wait`, the merge Job's first step.

The merge pod's service account may read the shards Job and list pods (the Role bench/submit/k8s.py grants). Every
POLL_S it reads the Job's `status.completedIndexes` and `status.failedIndexes` (the API's own account of each index,
whatever ended it: the bench's exit, an OOM kill, an eviction, a lost node, the Job's deadline) and the pods of the
indexes still open. It stops waiting when every index has ended, when the Job itself has (its Complete or Failed
condition), when every open index's pod has not started within start_deadline_s for a reason that will not pass
(an image it cannot pull: the waiting reason is named), or at its own deadline; a pod queued for a card, however
long, is waited for. Then it writes one line per shard, with the exit status
its bench left as a marker of this submission when it did, and the merge runs on what is there.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.errors import BenchError
from bench.submit.kube_api import KubeApi, KubeApiError

POLL_S = 30.0
OPEN = ("running", "pending")  # an index that may still end on its own
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
# Waiting reasons that will not pass by themselves: only a pod stuck on one of these is given up on at the start
# deadline. A pod the scheduler has no room for (a GPU queue on a shared cluster) or an index whose pod the Job has not
# made yet (its parallelism) is queued: it stays open until the merge's own deadline (--deadline-s).
BROKEN_START = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"}
)
log = logging.getLogger(__name__)
Reader = Callable[[], tuple[dict[str, Any], list[dict[str, Any]]]]  # the Job, and the pods of its indexes


@dataclass(frozen=True)
class ShardEnd:
    index: int  # 0-based, as the Job counts
    state: str  # succeeded | failed | not started | not ended | running | pending
    detail: str = ""

    def line(self, shards: int, status: str | None) -> str:
        exited = f" (its bench exited {status})" if status is not None else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"shard {self.index + 1}/{shards} (index {self.index}): {self.state}{detail}{exited}"


def parse_indexes(text: str | None) -> set[int]:
    """The API's index list ("0,2-4") as a set."""
    found: set[int] = set()
    for part in (text or "").split(","):
        if part.strip():
            first, _, last = part.strip().partition("-")
            found.update(range(int(first), int(last or first) + 1))
    return found


def job_ended(job: dict[str, Any]) -> str | None:
    """`Complete`, or `Failed: <reason>: <message>`, once the Job has ended; None while it runs."""
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            words = [condition["type"], condition.get("reason", ""), condition.get("message", "")]
            return ": ".join(word for word in words if word)
    return None


def seconds(stamp: str | None) -> float | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None


def pod_index(pod: dict[str, Any]) -> int | None:
    meta = pod.get("metadata", {})
    text = (meta.get("annotations") or {}).get(INDEX_ANNOTATION) or (meta.get("labels") or {}).get(INDEX_ANNOTATION)
    return int(text) if text is not None else None


def statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status", {})
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def started(pod: dict[str, Any]) -> bool:
    """Whether any of its containers ran: an init container waiting for the models counts."""
    if pod.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed"):
        return True
    return any({"running", "terminated"} & set(s.get("state") or {}) for s in statuses(pod))


def why_waiting(pod: dict[str, Any]) -> str:
    """What keeps a pod from starting: a container's waiting reason, or the scheduler's."""
    name = pod.get("metadata", {}).get("name", "?")
    for status in statuses(pod):
        waiting = (status.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") not in (None, "PodInitializing", "ContainerCreating"):
            return f"pod {name}: {status.get('name')} {waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"pod {name}: {condition.get('reason', 'not scheduled')}: {condition.get('message', '')}".rstrip(
                ": "
            )
    return f"pod {name}: {pod.get('status', {}).get('phase', 'Pending')}"


def cannot_start(pod: dict[str, Any]) -> bool:
    """A container of the pod waits on something that will not pass by itself (an image that cannot be pulled)."""
    return any(((s.get("state") or {}).get("waiting") or {}).get("reason") in BROKEN_START for s in statuses(pod))


def why_failed(pods: list[dict[str, Any]]) -> str:
    """How the last pod of a failed index ended: evicted, a deadline, or its container's end (OOMKilled, exit 1)."""
    if not pods:
        return "no pod left to say why"
    pod = max(pods, key=lambda p: p.get("metadata", {}).get("creationTimestamp", ""))
    name, status = pod.get("metadata", {}).get("name", "?"), pod.get("status", {})
    if status.get("reason"):
        return f"pod {name}: {status['reason']}: {status.get('message', '')}".rstrip(": ")
    for container in statuses(pod):
        ended = (container.get("state") or {}).get("terminated")
        if ended and ended.get("exitCode", 0) != 0:
            return f"pod {name}: {container.get('name')} {ended.get('reason', 'Error')} (exit {ended.get('exitCode')})"
    return f"pod {name}: {status.get('phase', 'Failed')}"


def shard_ends(
    job: dict[str, Any], pods: list[dict[str, Any]], shards: int, now: float, start_s: float
) -> list[ShardEnd]:
    status = job.get("status", {})
    done, failed = parse_indexes(status.get("completedIndexes")), parse_indexes(status.get("failedIndexes"))
    by_index: dict[int, list[dict[str, Any]]] = {}
    for pod in pods:
        if (index := pod_index(pod)) is not None:
            by_index.setdefault(index, []).append(pod)
    created = seconds(status.get("startTime") or job.get("metadata", {}).get("creationTimestamp")) or now
    ends = []
    for index in range(shards):
        mine = by_index.get(index, [])
        if index in done:
            ends.append(ShardEnd(index, "succeeded"))
        elif index in failed:
            ends.append(ShardEnd(index, "failed", why_failed(mine)))
        elif any(started(pod) for pod in mine):
            ends.append(ShardEnd(index, "running"))
        else:
            since = min((seconds(p.get("metadata", {}).get("creationTimestamp")) or now for p in mine), default=created)
            why = why_waiting(mine[-1]) if mine else "no pod yet"
            late = now - since >= start_s and any(cannot_start(pod) for pod in mine)
            ends.append(ShardEnd(index, "not started" if late else "pending", f"{why}, for {now - since:.0f} s"))
    return ends


def wait(
    read: Reader,
    shards: int,
    deadline_s: float,
    start_s: float,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = POLL_S,
) -> list[ShardEnd]:
    """How each index ended, polling until none is open, the Job has ended, or `deadline_s` has passed."""
    begun, ends = clock(), [ShardEnd(i, "pending", "the Job's status was never read") for i in range(shards)]
    while True:
        try:
            job, pods = read()
        except KubeApiError as e:  # a passing failure of the API: the next poll tries again
            log.warning("%s", e)
        else:
            ends = shard_ends(job=job, pods=pods, shards=shards, now=clock(), start_s=start_s)
            if not [end for end in ends if end.state in OPEN]:
                return ends
            if (over := job_ended(job)) is not None:
                return close(ends, f"the Job ended first ({over})")
        if clock() - begun >= deadline_s:
            return close(ends, f"still open at the merge's deadline ({deadline_s:.0f} s)")
        sleep(poll_s)


def close(ends: list[ShardEnd], why: str) -> list[ShardEnd]:
    return [replace(end, state="not ended", detail=why) if end.state in OPEN else end for end in ends]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.submit.job_wait", description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--job", required=True, help="the Indexed Job of the shards")
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--deadline-s", type=float, required=True)
    parser.add_argument("--start-deadline-s", type=float, required=True)
    parser.add_argument("--markers", type=Path, required=True, help="the submission's folder of shardI.status files")
    parser.add_argument("--report", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        api = KubeApi.in_cluster()
        ends = wait(api.job_reader(args.namespace, args.job), args.shards, args.deadline_s, args.start_deadline_s)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    lines = [end.line(args.shards, exit_status(args.markers, end.index)) for end in ends]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("".join(f"{line}\n" for line in lines))
    print("\n".join(lines))
    return 0


def exit_status(markers: Path, index: int) -> str | None:
    marker = markers / f"shard{index + 1}.status"
    return marker.read_text().strip() if marker.is_file() else None


if __name__ == "__main__":
    sys.exit(main())
