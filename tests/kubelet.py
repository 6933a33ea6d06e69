"""A kubelet of a test's own: one pod of a manifest played in Docker, its probes evaluated as the kubelet documents
them. Where no cluster can run, it exercises what the schemas cannot: that the probes reach the servers, that the
sidecars start in order before the main container, and that a sidecar restarted mid-run is waited for.

- The pod's network namespace belongs to a pause container on a network of the test's own (its IP is the pod IP);
  every container joins it (`network_mode=container:`), so they reach each other at 127.0.0.1, as in a pod.
- Init containers run in order: a regular one to its end (a failure fails the pod); a sidecar (restartPolicy
  Always) is started, and the next container waits for its startup probe to pass.
- Probes, by the kubelet's defaults (initialDelaySeconds 0, periodSeconds 10, timeoutSeconds 1, failureThreshold 3,
  successThreshold 1): `exec` runs in the container, exit 0 passes; `httpGet` goes to the pod IP unless `host` is
  set (from the node: here, this host), a status from 200 to 399 passes; `tcpSocket` connects likewise. The startup
  probe runs first, liveness only after it passed; failureThreshold failures in a row restart the container.
- A sidecar that exits, or fails its liveness probe, is started again after the kubelet's first crash back-off
  (10 s; a play may set a shorter one, `Pod.back_off_s`); its startup probe then runs again. When the main containers
  have ended, the sidecars are stopped, last first.
Resources, pull policies, the service-account token and the Job controller are not played (docs/running.md).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.containers.names import BenchNames

DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
BACK_OFF_S = 10.0  # the kubelet's first restart delay of a container that exited (CrashLoopBackOff doubles it)


class PodFailed(AssertionError):
    """The pod did not get to run its main containers: an init container failed, a startup probe never passed."""


@dataclass
class Events:
    """What the play's kubelet did, in order: `(seconds since the pod started, container, what happened)`."""

    origin: float = field(default_factory=time.monotonic)
    seen: list[tuple[float, str, str]] = field(default_factory=list)

    def add(self, container: str, what: str) -> None:
        self.seen.append((round(time.monotonic() - self.origin, 1), container, what))

    def of(self, container: str) -> list[str]:
        return [what for _, name, what in self.seen if name == container]


def probe_passes(probe: dict[str, Any], container: Any, pod_ip: str) -> bool:
    """One probe, as the kubelet runs it."""
    timeout = probe.get("timeoutSeconds", DEFAULTS["timeoutSeconds"])
    if "exec" in probe:
        return exec_passes(container, probe["exec"]["command"], timeout)
    if "httpGet" in probe:
        get = probe["httpGet"]
        url = f"http://{get.get('host') or pod_ip}:{get['port']}{get.get('path', '/')}"
        try:
            return 200 <= httpx.get(url, timeout=timeout, trust_env=False).status_code < 400
        except httpx.HTTPError:
            return False
    if "tcpSocket" in probe:
        try:
            socket.create_connection(
                (probe["tcpSocket"].get("host") or pod_ip, probe["tcpSocket"]["port"]), timeout
            ).close()
        except OSError:
            return False
        return True
    raise AssertionError(f"a probe the play does not know: {sorted(probe)}")


def exec_passes(container: Any, command: list[str], timeout_s: float) -> bool:
    """The command in the container, its exit status 0 within the probe's timeout."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(container.exec_run(command).exit_code), daemon=True)
    worker.start()
    worker.join(timeout_s + 1)  # the kubelet's timeout, and a second for docker's exec to start
    return bool(result) and result[0] == 0


class Sidecar:
    """A restartPolicy: Always init container, kept running by its probes and restarts."""

    def __init__(
        self, spec: dict[str, Any], container: Any, pod_ip: str, events: Events, back_off_s: float = BACK_OFF_S
    ) -> None:
        self.spec, self.container, self.pod_ip, self.events = spec, container, pod_ip, events
        self.back_off_s = back_off_s
        self.name = spec["name"]
        self.restarts = 0
        self.liveness_passed = 0  # liveness probes that passed
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._keep, name=f"kubelet-{self.name}", daemon=True)

    def started(self) -> None:
        """Wait until its startup probe passes (or, without one, until it runs); PodFailed when it never does."""
        probe = self.spec.get("startupProbe")
        if probe is None:
            self.events.add(self.name, "started")
            return
        if not self._passes_in_time(probe):
            raise PodFailed(f"{self.name}: the startup probe failed {probe['failureThreshold']} times")
        self.events.add(self.name, "startup probe passed")

    def _passes_in_time(self, probe: dict[str, Any]) -> bool:
        """Probe by its settings until it passes (True) or has failed failureThreshold times in a row (False)."""
        settings = DEFAULTS | probe
        if self.stopping.wait(settings["initialDelaySeconds"]):
            return True
        for _ in range(settings["failureThreshold"]):
            if probe_passes(probe, self.container, self.pod_ip):
                return True
            if self.stopping.wait(settings["periodSeconds"]):
                return True
        return False

    def _keep(self) -> None:
        """Liveness probes while it runs; a restart after the back-off when it exited or stopped answering."""
        while not self.stopping.is_set():
            alive = self._live()
            if self.stopping.is_set():
                return
            self.events.add(self.name, "exited" if alive is None else "liveness probe failed")
            if alive is not None:
                self.container.kill()
            if self.stopping.wait(self.back_off_s):
                return
            self.restarts += 1
            self.container.start()
            self.events.add(self.name, f"restarted ({self.restarts})")
            try:
                self.started()
            except PodFailed as e:
                self.events.add(self.name, str(e))

    def _live(self) -> bool | None:
        """Until it exits (None) or its liveness probe fails (False); True when the pod stops first."""
        probe = self.spec.get("livenessProbe")
        settings = DEFAULTS | (probe or {})
        failures = 0
        while not self.stopping.wait(1.0 if probe is None else settings["periodSeconds"]):
            self.container.reload()
            if self.container.status != "running":
                return None
            if probe is not None:
                passed = probe_passes(probe, self.container, self.pod_ip)
                self.liveness_passed += passed
                failures = 0 if passed else failures + 1
                if failures >= settings["failureThreshold"]:
                    return False
        return True


@dataclass
class Pod:
    """The pod's containers as the play runs them (the caller makes them: images, mounts, env)."""

    client: Any
    names: BenchNames
    network: str
    events: Events = field(default_factory=Events)
    back_off_s: float = BACK_OFF_S  # before a sidecar that exited is started again
    pause: Any = None
    sidecars: list[Sidecar] = field(default_factory=list)

    def start(self, image: str) -> str:
        """The pod's network namespace: a pause container on the test's network; returns the pod IP."""
        self.pause = self.client.containers.run(
            image, ["sleep", "infinity"], detach=True, network=self.network, labels=self.names.labels("k8s-pause")
        )
        self.pause.reload()
        ip: str = self.pause.attrs["NetworkSettings"]["Networks"][self.network]["IPAddress"]
        return ip

    def container(self, spec: dict[str, Any], **options: Any) -> Any:
        """A container of the pod, started: a manifest's `command` is the image's entrypoint, its `args` the rest."""
        return self.client.containers.run(
            spec["image"],
            spec.get("args"),
            entrypoint=spec.get("command"),
            detach=True,
            network_mode=f"container:{self.pause.id}",
            labels=self.names.labels(f"k8s-{spec['name']}"),
            **options,
        )

    def run_init(self, spec: dict[str, Any], pod_ip: str, **options: Any) -> None:
        """An init container: to its end, or, a sidecar, until its startup probe passes (then kept running)."""
        container = self.container(spec, **options)
        if spec.get("restartPolicy") != "Always":
            code = container.wait(timeout=600)["StatusCode"]
            self.events.add(spec["name"], f"exited {code}")
            if code != 0:
                raise PodFailed(f"init container {spec['name']} exited {code}: {container.logs().decode()[-2000:]}")
            return
        sidecar = Sidecar(spec, container, pod_ip, self.events, self.back_off_s)
        sidecar.started()
        sidecar.thread.start()
        self.sidecars.append(sidecar)

    def stop(self) -> None:
        """The sidecars, last first, once the main containers have ended."""
        for sidecar in reversed(self.sidecars):
            sidecar.stopping.set()
            sidecar.thread.join(timeout=30)
            sidecar.container.stop(timeout=5)
            self.events.add(sidecar.name, "stopped")
