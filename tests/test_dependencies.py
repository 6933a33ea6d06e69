"""Every third-party import of bench/ is declared in pyproject.toml, and the agent imports the standard library only.

Imports are read from the source (ast), dynamic ones (`importlib.import_module("pynvml")`) included, and mapped to
the distributions that provide them in this environment; one of those must be a declared dependency.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the suite's CI runs 3.11

ROOT = Path(__file__).resolve().parent.parent
OURS = {"agent", "bench"}


def imported(package: str) -> dict[str, set[str]]:
    """Top-level module name -> the files of `package` that import it (outside the standard library and ours)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
                names = [node.args[0].value] if isinstance(node.args[0], ast.Constant) else []
            for name in names:
                top = str(name).split(".")[0]
                if top not in sys.stdlib_module_names and top not in OURS:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {normal(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}


def test_the_agent_imports_the_standard_library_only() -> None:
    assert imported("agent") == {}


def test_every_third_party_import_of_the_bench_is_a_declared_dependency() -> None:
    providers = packages_distributions()
    deps = declared()
    missing = {
        module: sorted(files)
        for module, files in imported("bench").items()
        if not {normal(dist) for dist in providers.get(module, [])} & deps
    }
    assert missing == {}, f"declare these in pyproject.toml [project] dependencies: {missing}"


def test_the_scan_sees_the_imports_it_must() -> None:
    found = imported("bench")
    assert {"pytest", "numpy", "requests", "pynvml", "yaml", "docker"} <= set(found)  # pynvml: a dynamic import
    assert {"pytest", "numpy", "requests", "nvidia-ml-py", "pyyaml"} <= declared()
