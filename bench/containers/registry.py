"""Whether an image reference exists in its registry, asked the way `docker pull` asks (Docker Registry HTTP API v2).

HEAD /v2/<name>/manifests/<tag>; a 401 with a `WWW-Authenticate: Bearer realm=...,service=...` challenge gets an
anonymous pull token from the realm first (ghcr.io and Docker Hub both answer so for public images). A registry on
localhost or 127.0.0.1 is spoken to over plain HTTP, as Docker does. Nothing here runs unless the bench needs an
image it does not have; tests use a registry stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

DOCKER_HUB = "registry-1.docker.io"
MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Reference:
    registry: str
    name: str
    tag: str

    @property
    def base_url(self) -> str:
        host = self.registry.split(":")[0]
        scheme = "http" if host in ("localhost", "127.0.0.1") else "https"
        return f"{scheme}://{self.registry}"


def parse_reference(image: str) -> Reference:
    """`ghcr.io/ggml-org/llama.cpp:server-cuda-b11434` -> (ghcr.io, ggml-org/llama.cpp, server-cuda-b11434)."""
    rest, _, digest = image.partition("@")
    first, _, remainder = rest.partition("/")
    if remainder and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = DOCKER_HUB, rest if "/" in rest else f"library/{rest}"
    name, _, tag = path.rpartition(":") if ":" in path.rsplit("/", 1)[-1] else (path, "", "latest")
    return Reference(registry, name, digest or tag)


def _token(challenge: str, timeout: float) -> str:
    fields = dict(_CHALLENGE.findall(challenge))
    if "realm" not in fields:
        return ""
    query = urllib.parse.urlencode({k: v for k, v in fields.items() if k in ("service", "scope")})
    with urllib.request.urlopen(f"{fields['realm']}?{query}", timeout=timeout) as answer:
        body = json.load(answer)
    return str(body.get("token") or body.get("access_token") or "")


def _head(url: str, token: str, timeout: float) -> int:
    headers = {"Accept": MANIFEST_TYPES} | ({"Authorization": f"Bearer {token}"} if token else {})
    request = urllib.request.Request(url, method="HEAD", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        e.close()  # an HTTPError holds the connection open
        if e.code == 401 and not token:
            challenge = e.headers.get("WWW-Authenticate", "")
            if challenge.lower().startswith("bearer"):
                fresh = _token(challenge, timeout)
                if fresh:
                    return _head(url, fresh, timeout)
        return int(e.code)


def image_in_registry(image: str, timeout: float = 20.0) -> bool | None:
    """True when the registry has the image, False when it answers that it has not, None when it cannot be asked."""
    ref = parse_reference(image)
    try:
        status = _head(f"{ref.base_url}/v2/{ref.name}/manifests/{ref.tag}", "", timeout)
    except (OSError, ValueError):  # no network, a name that does not resolve, a broken answer
        return None
    if status == 200:
        return True
    return False if status in (401, 403, 404) else None
