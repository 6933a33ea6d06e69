"""What the installed package holds: agent/ and bench/ (bench/testing's fakes, which users extend the bench with,
among them), never the suite's own doubles of engines (a one-node Slurm cluster, a kubelet play: tests/)."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the suite's CI runs 3.11

ROOT = Path(__file__).resolve().parent.parent
SLURM_DAEMONS = {"munged", "slurmctld", "slurmd"}  # what tests/slurm_cluster.py starts


def shipped_modules() -> list[Path]:
    """The modules setuptools puts in the wheel: those of the packages pyproject.toml's find includes."""
    include = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    patterns = include["find"]["include"]
    tops = [top for top in sorted(ROOT.iterdir()) if top.is_dir() and not top.name.startswith(".")]
    found = []
    for path in (path for top in tops if matches(top.name, patterns) for path in sorted(top.rglob("*.py"))):
        if matches(".".join(path.relative_to(ROOT).parent.parts), patterns):
            found.append(path)
    return found


def matches(package: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(package, pattern) for pattern in patterns)


def test_the_wheel_ships_agent_and_bench_and_not_the_suite() -> None:
    tops = {path.relative_to(ROOT).parts[0] for path in shipped_modules()}
    assert tops == {"agent", "bench"}


def test_no_shipped_module_plays_an_engine() -> None:
    """The Slurm cluster and the kubelet play are tests/' own: no shipped module starts Slurm's daemons or imports
    them, and bench/testing holds only the doubles its __init__ offers and their parts."""
    assert (ROOT / "tests" / "slurm_cluster.py").is_file() and (ROOT / "tests" / "kubelet.py").is_file()
    for path in shipped_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
        assert not named & SLURM_DAEMONS, path
        imports = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imports |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not {name for name in imports if name.split(".")[0] in ("tests", "slurm_cluster", "kubelet")}, path
    assert sorted(modules_of_testing()) == sorted(offered_and_their_parts())


def modules_of_testing() -> set[str]:
    return {path.stem for path in (ROOT / "bench" / "testing").glob("*.py") if path.stem != "__init__"}


def offered_and_their_parts() -> set[str]:
    """The modules of bench/testing its __init__ offers a double from, and those they import (their parts)."""
    from bench.testing import EXPORTS

    found, todo = set(), set(EXPORTS.values())
    while todo:
        found.add(module := todo.pop())
        tree = ast.parse((ROOT / "bench" / "testing" / f"{module}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench.testing."):
                todo |= {(node.module or "").split(".")[2]} - found
    return found
