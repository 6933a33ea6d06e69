"""A container engine as the bench uses it: Docker's, or any that speaks its API (podman's service does) through
the docker SDK; a client, one container run to its end, labels, and what an instance leaves behind.

Everything the bench creates carries the LABEL, and a bench instance's things also its owner label
(bench.containers.names), by which remove_labelled finds them; and the label AGENTBENCH_CONTAINER_LABEL names, where
set, by which a caller that starts many benches (.ci/run) removes what they left, and nothing of anyone else's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import stopping
from bench.errors import PrerequisiteError, SandboxError
from bench.processes import OUTPUT_LIMIT, UNTIL_POLL_S, CappedOutput

LABEL = "agentbench.role"  # on containers and networks the bench creates (not on images: containers inherit those)
# Docker's own copy of a container's output stays small (the bench reads the output as it comes, see run_container).
EXTRA_LABEL_VARIABLE = "AGENTBENCH_CONTAINER_LABEL"  # KEY=VALUE, e.g. agentbench.ci=3fa9c2d1
LOG_CONFIG = {"type": "json-file", "config": {"max-size": "4m", "max-file": "1"}}


def role_labels(role: str) -> dict[str, str]:
    """The labels of a thing the bench creates in `role`: LABEL, and the caller's own label where one is set."""
    key, _, value = os.environ.get(EXTRA_LABEL_VARIABLE, "").partition("=")
    return {LABEL: role, **({key: value} if key else {})}


def remove_container(client: Any, name_or_id: str) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound):
        client.containers.get(name_or_id).remove(force=True)


def remove_labelled(client: Any, label: str) -> list[str]:
    """Remove every container, then network, then volume carrying `label` ("KEY=VALUE"); returns what went."""
    import docker.errors

    removed = []
    for container in client.containers.list(all=True, filters={"label": label}):
        remove_container(client, container.id)
        removed.append(f"container {container.name}")
    for what, kind in (("network", client.networks), ("volume", client.volumes)):
        for item in kind.list(filters={"label": label}):
            with contextlib.suppress(docker.errors.NotFound):
                item.remove()
                removed.append(f"{what} {item.name}")
    return removed


SANDBOX_UID = 10001  # the `agent` user of docker/sandbox.Dockerfile


def docker_client() -> Any:
    """A client for the local engine, or PrerequisiteError saying how to get one."""
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception as e:
        raise PrerequisiteError(
            f"no Docker engine answers ({type(e).__name__}); start dockerd or use --sandbox local"
        ) from e


def docker_or_none() -> Any:
    """A client for the local Docker engine, or None when none answers: the one probe a bench makes."""
    try:
        return docker_client()
    except PrerequisiteError:
        return None


def owner_for_container(*folders: Path) -> str:
    """The uid:gid the container runs as; as root, hand the folders to the sandbox's unprivileged user."""
    if os.geteuid() != 0:
        return f"{os.getuid()}:{os.getgid()}"
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
    return f"{SANDBOX_UID}:{SANDBOX_UID}"


def run_container(
    client: Any,
    timeout_s: float,
    output_limit: int = OUTPUT_LIMIT,
    state: dict[str, Any] | None = None,
    until: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> tuple[int | None, bool, str]:
    """Run a container to completion (or kill it at the timeout); returns (exit code, timed out, output), and
    fills `state`, when given, with Docker's account of how it ended (its State: OOMKilled, ...). `until`, asked
    every UNTIL_POLL_S while it runs: once True, the container is killed (the recording proxy's step limit:
    bench/sandbox/proxy_stop.py), and the exit code is the kill's.

    The output is read as it comes, through an attachment made before the container starts, and kept up to
    `output_limit` bytes (its start and end, with a note where it was cut): a flood costs neither memory here
    nor Docker's disk (LOG_CONFIG).
    """
    import docker.errors
    import requests.exceptions

    try:
        container = client.containers.create(log_config=LOG_CONFIG, **kwargs)
    except docker.errors.DockerException as e:
        raise SandboxError(f"the sandbox container could not be created: {str(e)[:300]}") from e
    try:
        output = CappedOutput(output_limit)
        stream = client.api.attach(container.id, stdout=True, stderr=True, stream=True, logs=False)
        reader = threading.Thread(target=_read_stream, args=(stream, output), daemon=True)
        reader.start()
        try:
            container.start()
        except docker.errors.DockerException as e:
            raise SandboxError(f"the sandbox container did not start: {str(e)[:300]}") from e
        try:
            status = stopping.wait_call(lambda: wait_until(container, timeout_s, until))  # a worker's stop is seen
            code, timed_out = int(status.get("StatusCode", -1)), False
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            container.kill()
            code, timed_out = None, True
        except BaseException:  # Ctrl-C, a worker's stop: its attachment closed here, the container removed below
            _close_stream(stream)
            raise
        reader.join(10)
        _close_stream(stream)
        if state is not None:
            with contextlib.suppress(docker.errors.DockerException):
                container.reload()
                state.update(container.attrs.get("State") or {})
        return code, timed_out, output.text()
    finally:
        remove_container(client, container.id)


def wait_until(container: Any, timeout_s: float, until: Callable[[], bool] | None) -> dict[str, Any]:
    """container.wait(timeout=timeout_s), the container killed once `until()` is True."""
    import requests.exceptions

    deadline = time.monotonic() + timeout_s
    while until is not None:
        try:  # Docker's wait with a short timeout: a ReadTimeout each slice the container still runs
            return container.wait(timeout=max(0.1, min(UNTIL_POLL_S, deadline - time.monotonic())))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):  # docker-py says either
            if until():
                container.kill()
                return container.wait(timeout=60)
            if time.monotonic() >= deadline:
                raise
    return container.wait(timeout=timeout_s)


def _read_stream(stream: Any, output: CappedOutput) -> None:
    with contextlib.suppress(Exception):  # the stream closed under it: what was read is kept
        for chunk in stream:
            output.add(chunk)


def _close_stream(stream: Any) -> None:
    """Close an attach stream whole: docker-py's close() shuts the socket, but the socket's reader still holds it
    open (a ResourceWarning, and a file descriptor, per container) until the response itself is closed."""
    stream.close()
    stream._response.close()
