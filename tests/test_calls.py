"""A call in agent/ and bench/ passes at most four arguments by position: past four, a reader matches values to
parameters by counting, and a parameter added or moved in between shifts them silently. Name them (`f(a, b, c=c,
d=d, e=e)`).

Passed by position as they must be: what a function gathers with *args (a git command's words, a log line's
values), and C functions called through ctypes, which take no names.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_POSITIONAL = 4
LOGGERS = {"log", "logger", "logging"}  # printf-style: a message's values follow it in order
FOREIGN = {"prctl", "syscall"}  # Linux's prctl(2) and syscall(2) through ctypes


def python_files() -> list[Path]:
    return sorted(path for top in ("agent", "bench") for path in (ROOT / top).rglob("*.py"))


def called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def gathering(tree: ast.AST) -> dict[str, bool]:
    """Each function name defined in `tree`: whether every function of that name gathers positional arguments
    (*args), so that a call to it passes its words in order."""
    gathers: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            gathers[node.name] = gathers.get(node.name, True) and node.args.vararg is not None
    return gathers


def exempt(call: ast.Call, own: dict[str, bool], anywhere: dict[str, bool]) -> bool:
    """A call to a logger, to a C function, or to a function that gathers: the module's own of that name where it
    has one, else those of agent/ and bench/."""
    name = called_name(call)
    owner = call.func.value if isinstance(call.func, ast.Attribute) else None
    logged = isinstance(owner, ast.Name) and owner.id in LOGGERS
    return logged or name in FOREIGN or own.get(name, anywhere.get(name, False))


def long_calls(paths: list[Path], root: Path = ROOT) -> list[str]:
    """`file:line name(N positional)` for each call passing more than MAX_POSITIONAL arguments by position."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in paths}
    anywhere = gathering(ast.Module(body=[node for tree in trees.values() for node in tree.body], type_ignores=[]))
    found = []
    for path, tree in trees.items():
        own = gathering(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or exempt(node, own, anywhere):
                continue
            positional = sum(not isinstance(arg, ast.Starred) for arg in node.args)
            if positional > MAX_POSITIONAL:
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {called_name(node)}({positional})")
    return sorted(found)


def test_no_call_passes_more_than_four_arguments_by_position() -> None:
    found = long_calls(python_files())
    assert not found, f"name the arguments past the fourth (f(a, b, c, d, e=e)): {found}"


def test_the_rule_finds_a_long_call_and_passes_gathered_and_logged_ones(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "def point(a, b, c, d, e): ...\n"
        "def git(cwd, *args): ...\n"
        "point(1, 2, 3, 4, 5)\n"
        "point(1, 2, 3, 4, e=5)\n"
        "git('.', 'log', '-1', '--format=%H', 'HEAD')\n"
        "log.info('%s %s %s %s', 1, 2, 3, 4)\n"
        "point(*range(5))\n"
    )
    other = tmp_path / "other.py"  # the same names the other way round: a module's own function is the one called
    other.write_text("def point(*args): ...\ndef git(a, b, c, d, e): ...\n")
    assert long_calls([module, other], root=tmp_path) == ["m.py:5 point(5)"]
