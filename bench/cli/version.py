"""`bench --version`: the bench's own version, the commit of this checkout, and the llama.cpp build it runs."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from bench import ROOT

PACKAGE = "local-agent-bench"


def package_version() -> str:
    """The installed package's version; a checkout used without installing it: pyproject.toml's."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
        return found.group(1) if found else "unknown"


def versions() -> list[str]:
    from bench.llama.pin import installed_build
    from bench.provenance import git_dirty, git_sha

    sha = git_sha(ROOT)
    checkout = f"{sha[:12]}{' with uncommitted changes' if git_dirty(ROOT) else ''}" if sha else "not a git checkout"
    return [f"bench {package_version()}", f"git {checkout}", f"llama.cpp {installed_build()}"]


class Version(argparse.Action):
    """--version, worked out only when asked for (it runs git and llama-server)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        text = "print the bench's version, this checkout's commit and the llama.cpp build, then exit"
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=text)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: Any) -> None:
        print("\n".join(versions()))
        parser.exit()
