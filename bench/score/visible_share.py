"""The visible share of an exercise's tests (`fixtures import exercism --visible SHARE`): a test file with all but
every k-th of its tests removed, read by its syntax tree, never run."""

from __future__ import annotations

import ast
import math


def test_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Test functions and test methods, in the file's order."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += [
                n
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
            ]
    return found


def visible_share(text: str, share: float) -> str | None:
    """The test file with all but `share` of its tests (every k-th, from the first) removed; None: none kept."""
    tree = ast.parse(text)
    tests = test_functions(tree)
    keep_count = min(len(tests), math.ceil(len(tests) * share))
    if keep_count == 0:
        return None
    kept = {id(tests[round(i * len(tests) / keep_count)]) for i in range(keep_count)}
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()

    def span(node: ast.stmt) -> range:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        while first > 0 and not lines[first - 1].strip():  # the blank lines before it go too
            first -= 1
        return range(first, node.end_lineno or node.lineno)

    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if n in tests]
            if methods and not any(id(n) in kept for n in methods):
                drop.update(span(node))  # a class left without tests goes whole
                continue
            drop.update(line for n in methods if id(n) not in kept for line in span(n))
        elif node in tests and id(node) not in kept:
            drop.update(span(node))
    return "".join(line for i, line in enumerate(lines) if i not in drop)
