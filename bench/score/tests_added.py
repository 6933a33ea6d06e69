"""How many test functions the agent added: read from the source (ast), never by running the agent's code.

A test counts when it is a `test*` function (at module level, in a `Test*` class or in a unittest TestCase) in a new
or changed test file that is a real file (not a symlink), that the file did not have at start, and whose arguments
and body differ from every test the fixture had and every test already counted: copies of visible tests, renamed
or not, star imports of them, and symlinks to them add nothing. Parametrized cases count once, as one function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from bench.agents.article import is_test_file as agent_is_test_file
from bench.fixtures.fixture import Fixture, fixture_files


def is_test_file(path: str) -> bool:
    """Test code by pytest's default names, conftest.py included: the agent's own rule, applied to a path."""
    return agent_is_test_file(PurePosixPath(path).name)


def _tests_in(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or _is_test_case(node)):
            yield from _tests_in(node, f"{prefix}{node.name}::")


def _is_test_case(node: ast.ClassDef) -> bool:
    """A unittest.TestCase subclass, which pytest collects whatever its name (exercism's `LeapTest`)."""
    return any(getattr(base, "attr", getattr(base, "id", "")) == "TestCase" for base in node.bases)


def _shape(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """What a test does, without its name, decorators or docstring: two tests of the same shape are copies."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(function.args) + "".join(ast.dump(statement) for statement in body)


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None


def count_tests_added(fx: Fixture, copy: Path, changed: list[str]) -> tuple[int, str | None]:
    """New test functions in the agent's new or changed test files; and a problem worth noting, if any."""
    seen: set[str] = set()
    for original_file in fixture_files(fx):
        tree = _parse(fx.path / original_file) if is_test_file(original_file.as_posix()) else None
        if tree is not None:
            seen.update(_shape(function) for _, function in _tests_in(tree))
    added, problems = 0, []
    for rel in changed:
        path = copy / rel
        if not is_test_file(rel) or rel in fx.visible_tests or not (path.is_file() or path.is_symlink()):
            continue
        if path.is_symlink():
            problems.append(f"{rel} is a symlink")
            continue
        tree = _parse(path)
        if tree is None:
            problems.append(f"{rel} does not parse")
            continue
        original = _parse(fx.path / rel) if (fx.path / rel).is_file() else None
        before = {name for name, _ in _tests_in(original)} if original else set()
        for name, function in _tests_in(tree):
            shape = _shape(function)
            if name not in before and shape not in seen:
                seen.add(shape)
                added += 1
    problem = f"test files not counted: {', '.join(problems)}" if problems else None
    return added, problem
