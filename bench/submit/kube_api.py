"""The two reads of the Kubernetes API the merge Job makes (bench/submit/job_wait.py): the shards Job, and its pods.

In a pod it uses the pod's service-account token and the cluster's CA, at the API's in-cluster address
(KUBERNETES_SERVICE_HOST/PORT), as client libraries do. AGENTBENCH_KUBE_API names another address (`kubectl proxy`'s
http://127.0.0.1:8001, say); the token is sent when the pod has one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.errors import BenchError, PrerequisiteError

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeApiError(BenchError):
    """A read that failed in passing (a timeout, a 5xx): the next poll tries again."""


@dataclass(frozen=True)
class KubeApi:
    base: str
    token: str | None = None
    verify: str | bool = True  # the CA file, or True for the system's

    @classmethod
    def in_cluster(cls, account: Path | None = None, environ: dict[str, str] | None = None) -> KubeApi:
        account = account or ACCOUNT
        environ = dict(os.environ) if environ is None else environ
        token = (account / "token").read_text().strip() if (account / "token").is_file() else None
        verify: str | bool = str(account / "ca.crt") if (account / "ca.crt").is_file() else True
        if environ.get("AGENTBENCH_KUBE_API"):
            return cls(environ["AGENTBENCH_KUBE_API"].rstrip("/"), token, verify)
        host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host or token is None:
            raise PrerequisiteError(
                "no Kubernetes API here (KUBERNETES_SERVICE_HOST and a service-account token): this runs in the merge "
                "Job's pod, whose service account the manifests bind to a Role that reads the shards Job"
            )
        return cls(f"https://{f'[{host}]' if ':' in host else host}:{port}", token, verify)

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            answer = httpx.get(
                self.base + path, params=params, headers=headers, verify=self.verify, timeout=30.0, trust_env=False
            )
        except httpx.HTTPError as e:
            raise KubeApiError(f"the Kubernetes API did not answer {path}: {e}") from None
        if answer.status_code in (401, 403):
            raise PrerequisiteError(
                f"the Kubernetes API refused {path} (HTTP {answer.status_code}): the merge Job's service account "
                "needs the manifests' Role and RoleBinding (kubectl apply them with the Jobs)"
            )
        if answer.status_code != 200:
            raise KubeApiError(f"the Kubernetes API answered {path} with HTTP {answer.status_code}")
        found: dict[str, Any] = answer.json()
        return found

    def job_reader(self, namespace: str, job: str) -> Callable[[], tuple[dict[str, Any], list[dict[str, Any]]]]:
        """A reader of the Job and of the pods the Job controller labelled as its own."""

        def read() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            found = self.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job}")
            pods = self.get(
                f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": f"batch.kubernetes.io/job-name={job}"}
            )
            return found, list(pods.get("items") or [])

        return read
