"""Every module of agent/ and bench/ readable in one sitting: at most 300 lines, and no function over 50.

A module that grows past the limit is split along its seams, a function into named steps (docs/internals.md says
where each part lives). The only exceptions are listed below, each with the branch that removes it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 50

# Known offenders, owned by branches working on those folders at the same time as this test was added; the
# integrator empties this list when merging them.
KNOWN: dict[str, str] = {}


def python_files() -> list[Path]:
    return sorted(path for top in ("agent", "bench") for path in (ROOT / top).rglob("*.py"))


def offenders(paths: list[Path] | None = None, root: Path = ROOT) -> list[tuple[str, int]]:
    """(module, lines) or (module:function, lines) for each module and function over its limit."""
    found = []
    for path in python_files() if paths is None else paths:
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append((name, lines))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append((f"{name}:{node.name}", length))
    return found


def test_no_module_over_300_lines_and_no_function_over_50() -> None:
    new = [f"{where} ({lines} lines)" for where, lines in offenders() if where not in KNOWN]
    assert not new, f"split these (modules at most {MAX_MODULE_LINES} lines, functions {MAX_FUNCTION_LINES}): {new}"


def test_every_known_offender_is_still_one() -> None:
    """An entry that is no longer over its limit is removed from KNOWN, so that the list only shrinks (one test, not
    one per entry: an empty list would be an empty parameter set, a skip)."""
    found = dict(offenders())
    assert [where for where in KNOWN if where not in found] == [], "within the limits now: remove them from KNOWN"


def test_the_census_finds_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    def function(name: str, lines: int) -> str:  # `def` and its body: `lines` lines in all
        return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))

    short = tmp_path / "short.py"
    short.write_text(function("fits", MAX_FUNCTION_LINES) + function("long", MAX_FUNCTION_LINES + 1))
    long = tmp_path / "long.py"
    long.write_text("x = 0\n" * (MAX_MODULE_LINES + 1))
    assert offenders([short, long], tmp_path) == [("short.py:long", MAX_FUNCTION_LINES + 1), ("long.py", 301)]
