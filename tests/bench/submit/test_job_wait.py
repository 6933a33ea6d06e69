"""The merge Job's wait on the shards Job (bench/submit/job_wait.py) against a recorded Job status and pod list in
the API's documented JSON shape (data/: written here), on a clock of the test's own; and its two reads of the API
(bench/submit/kube_api.py) against a local HTTP server that answers them with that data."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_api_stand_in import NO_CARD, Recorded, ShardsJob, serve

from bench.errors import PrerequisiteError
from bench.submit import job_wait
from bench.submit.job_wait import ShardEnd, parse_indexes, seconds, shard_ends, wait
from bench.submit.kube_api import KubeApi, KubeApiError

DATA = Path(__file__).parent / "data"
JOB = json.loads((DATA / "shards_job.json").read_text())
PODS = json.loads((DATA / "shards_pods.json").read_text())["items"]
CREATED = seconds(JOB["status"]["startTime"]) or 0.0
MINUTE = 60.0


def test_the_apis_index_lists_are_read_as_sets() -> None:
    assert parse_indexes("0,2-4,7") == {0, 2, 3, 4, 7} and parse_indexes("") == parse_indexes(None) == set()


def test_each_index_is_named_by_how_the_job_and_its_pod_say_it_ended() -> None:
    late = shard_ends(JOB, PODS, 4, CREATED + 20 * MINUTE, 15 * MINUTE)
    assert [(end.state, end.detail) for end in late] == [
        ("succeeded", ""),
        ("failed", "pod m1-shards-1-x7k2p: bench OOMKilled (exit 137)"),
        (
            "not started",
            "pod m1-shards-2-q9w4z: wait-for-models ImagePullBackOff: Back-off pulling image "
            '"agentbench/bench:0a1b2c3d4e5f", for 1200 s',
        ),
        ("running", ""),  # its first init container waits for the models: it has started
    ]
    early = shard_ends(JOB, PODS, 4, CREATED + 5 * MINUTE, 15 * MINUTE)
    assert early[2].state == "pending"  # an image pull may still succeed
    no_pod = shard_ends(JOB, [], 4, CREATED + 20 * MINUTE, 15 * MINUTE)[3]
    assert (no_pod.state, no_pod.detail) == ("pending", "no pod yet, for 1200 s")  # the Job's parallelism: queued


def queued_for_a_card(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the scheduler leaves it on a shared cluster whose GPUs are all taken."""
    queued = copy.deepcopy(pod)
    queued["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            }
        ],
    }
    return queued


def test_shards_queued_for_a_card_longer_than_an_hour_are_waited_for_until_they_end() -> None:
    open_job = copy.deepcopy(JOB)
    open_job["status"].update(completedIndexes="0", failedIndexes="1")
    queued = [PODS[0], queued_for_a_card(PODS[1]), queued_for_a_card(PODS[2])]  # indexes 1, 2 and 3
    clock = Clock(CREATED)
    reads: list[float] = []

    def read() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        reads.append(clock.now)
        if clock.now < CREATED + 75 * MINUTE:  # both queued for 75 minutes: past the 15 minutes' start deadline
            return open_job, queued
        done = copy.deepcopy(open_job)
        done["status"].update(completedIndexes="0,2-3", conditions=[{"type": "Failed", "status": "True"}])
        return done, PODS[:1]

    ends = wait(read, 4, 3 * 24 * 3600, 15 * MINUTE, lambda: clock.now, clock.sleep, poll_s=30)
    assert [end.state for end in ends] == ["succeeded", "failed", "succeeded", "succeeded"]
    assert reads[-1] >= CREATED + 75 * MINUTE and len(reads) == 151
    queued_state = shard_ends(open_job, queued, 4, CREATED + 70 * MINUTE, 15 * MINUTE)[2]
    assert queued_state.state == "pending" and "Insufficient nvidia.com/gpu" in queued_state.detail


def test_the_merge_waits_through_a_shard_queued_longer_than_an_hour_as_the_api_lists_its_pod() -> None:
    """Through the API's stand-in (tests/kube_api_stand_in.py) and the merge's own reads: shard 2's pod is Pending,
    unschedulable for want of a card, for 70 minutes, then runs 10 minutes and succeeds; the wait is still there."""
    clock = Clock(CREATED)
    shards = ShardsJob("m1-shards", 2, start=CREATED, ended={0: 0}, queued={1: CREATED})
    seen: list[tuple[float, list[ShardEnd]]] = []

    def cluster_moves_on(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now >= CREATED + 70 * MINUTE and shards.queued:  # a card is free: the pod is scheduled and runs
            del shards.queued[1]
            shards.running.add(1)
        if clock.now >= CREATED + 80 * MINUTE:
            shards.running.discard(1)
            shards.ended[1] = 0

    with serve(shards) as url:
        read = KubeApi(url, verify=False).job_reader("default", "m1-shards")  # plain HTTP: no CA bundle to load

        def reader() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            job, pods = read()
            seen.append((clock.now, shard_ends(job, pods, 2, clock.now, 15 * MINUTE)))
            return job, pods

        ends = wait(reader, 2, 3 * 24 * 3600, 15 * MINUTE, lambda: clock.now, cluster_moves_on, poll_s=30)
    assert [end.state for end in ends] == ["succeeded", "succeeded"]
    states = {now - CREATED: [end.state for end in read_ends] for now, read_ends in seen}
    assert max(at for at, state in states.items() if state == ["succeeded", "pending"]) == 69.5 * MINUTE
    assert states[75 * MINUTE] == ["succeeded", "running"] and max(states) == 80 * MINUTE  # then it returned
    (hour_in,) = [read_ends[1] for now, read_ends in seen if now == CREATED + 61 * MINUTE]
    assert (hour_in.state, hour_in.detail) == ("pending", f"pod m1-shards-1-p0d: Unschedulable: {NO_CARD}, for 3660 s")


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def finished(job: dict[str, Any], index: int) -> dict[str, Any]:
    """The recorded Job once index `index` also completed (and with it, every index)."""
    done = copy.deepcopy(job)
    done["status"]["completedIndexes"] = f"0,{index}"
    done["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    return done


def test_the_wait_ends_once_every_index_has_ended_polling_in_between() -> None:
    clock = Clock(CREATED + 20 * MINUTE)
    states = iter([(JOB, PODS), (JOB, PODS), (finished(JOB, 3), PODS[:2])])
    ends = wait(lambda: next(states), 4, 3600, 15 * MINUTE, lambda: clock.now, clock.sleep, poll_s=30)
    assert [end.state for end in ends] == ["succeeded", "failed", "not started", "succeeded"]
    assert clock.sleeps == [30, 30]


def test_a_job_that_ended_first_closes_the_indexes_still_open() -> None:
    failed = copy.deepcopy(JOB)
    failed["status"]["conditions"] = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "DeadlineExceeded",
            "message": "Job was active longer than specified deadline",
        }
    ]
    clock = Clock(CREATED + 5 * MINUTE)
    ends = wait(lambda: (failed, PODS), 4, 3600, 15 * MINUTE, lambda: clock.now, clock.sleep)
    assert ends[3] == ShardEnd(
        3, "not ended", "the Job ended first (Failed: DeadlineExceeded: Job was active longer than specified deadline)"
    )
    assert clock.sleeps == []


def test_the_wait_gives_up_at_its_deadline_and_rides_out_a_passing_api_failure() -> None:
    clock = Clock(CREATED + 20 * MINUTE)
    calls = []

    def read() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        calls.append(clock.now)
        if len(calls) == 2:
            raise KubeApiError("the Kubernetes API did not answer: timed out")
        return JOB, PODS

    ends = wait(read, 4, 300, 15 * MINUTE, lambda: clock.now, clock.sleep, poll_s=60)
    assert len(calls) == 6 and ends[3].state == "not ended" and "merge's deadline (300 s)" in ends[3].detail
    assert ends[1].state == "failed"  # what had ended stays as it ended


@pytest.fixture
def api() -> Iterator[str]:
    """The two reads, answered from data/ (403 without the token, as an API server without the RoleBinding)."""
    pods = "/api/v1/namespaces/ns/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3Dm1-shards"
    answers = {"/apis/batch/v1/namespaces/ns/jobs/m1-shards": JOB, pods: {"kind": "PodList", "items": PODS}}
    with serve(Recorded(answers), token="t0ken") as url:
        yield url


def test_the_reads_ask_for_the_job_and_its_pods_with_the_pods_token(api: str, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t0ken\n")
    client = KubeApi.in_cluster(tmp_path, {"AGENTBENCH_KUBE_API": api})
    job, pods = client.job_reader("ns", "m1-shards")()
    assert job["metadata"]["name"] == "m1-shards" and [p["metadata"]["name"] for p in pods] == [
        p["metadata"]["name"] for p in PODS
    ]
    refused = KubeApi(api, "wrong")
    with pytest.raises(PrerequisiteError, match=r"refused .*m1-shards \(HTTP 403\): .* needs the manifests' Role"):
        refused.job_reader("ns", "m1-shards")()
    with pytest.raises(PrerequisiteError, match="no Kubernetes API here"):
        KubeApi.in_cluster(tmp_path / "none", {})
    assert KubeApi.in_cluster(tmp_path, {"KUBERNETES_SERVICE_HOST": "fd00::1"}).base == "https://[fd00::1]:443"


def test_the_command_writes_one_line_per_shard_with_the_exit_status_its_bench_left(
    api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "token").write_text("t0ken")
    monkeypatch.setattr("bench.submit.kube_api.ACCOUNT", tmp_path)
    monkeypatch.setenv("AGENTBENCH_KUBE_API", api)
    markers = tmp_path / "submissions" / "s1"
    markers.mkdir(parents=True)
    (markers / "shard1.status").write_text("0\n")
    (markers / "shard2.status").write_text("137\n")
    report = tmp_path / "merged-shards.txt"
    argv = [
        "--namespace",
        "ns",
        "--job",
        "m1-shards",
        "--shards",
        "3",
        "--deadline-s",
        "0",
        "--start-deadline-s",
        "0",
        "--markers",
        str(markers),
        "--report",
        str(report),
    ]
    assert job_wait.main(argv) == 0
    first, second, third = report.read_text().splitlines()
    assert first == "shard 1/3 (index 0): succeeded (its bench exited 0)"
    assert (
        second
        == "shard 2/3 (index 1): failed: pod m1-shards-1-x7k2p: bench OOMKilled (exit 137) (its bench exited 137)"
    )
    assert third.startswith("shard 3/3 (index 2): not started: pod m1-shards-2-q9w4z: wait-for-models ImagePullBackOff")
    assert capsys.readouterr().out.splitlines()[0] == "shard 1/3 (index 0): succeeded (its bench exited 0)"
