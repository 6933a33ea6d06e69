"""Every module of agent/ and bench/ readable in one sitting, counted in what a reader reads: the non-blank characters.

Lines are not the measure: a module can stay under a line limit by packing statements, which the formatter then
undoes. Characters cannot be packed. The limits are those that the well-shaped modules of the project meet; a
module that grows past them is split along a seam a reader would name, a function into named steps (docs/internals.md
says where each part lives). The only exceptions are listed below, each with the reason it is still there.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_CHARS = 12_000
MAX_FUNCTION_CHARS = 2_000

# Known offenders, owned by branches working on those folders at the same time as this test was changed; the
# integrator empties this list when merging them.
KNOWN: dict[str, str] = {}


def python_files() -> list[Path]:
    return sorted(path for top in ("agent", "bench") for path in (ROOT / top).rglob("*.py"))


def visible_chars(text: str) -> int:
    """What a reader reads: every character but spaces, tabs and line ends (indentation is not text)."""
    return sum(1 for char in text if not char.isspace())


def offenders(paths: list[Path] | None = None, root: Path = ROOT) -> list[tuple[str, int]]:
    """(module, characters) or (module:function, characters) for each module and function over its limit."""
    found = []
    for path in python_files() if paths is None else paths:
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if (chars := visible_chars(text)) > MAX_MODULE_CHARS:
            found.append((name, chars))
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                if (chars := visible_chars(body)) > MAX_FUNCTION_CHARS:
                    found.append((f"{name}:{node.name}", chars))
    return found


def test_no_module_and_no_function_over_its_characters() -> None:
    new = [f"{where} ({chars} characters)" for where, chars in offenders() if where not in KNOWN]
    assert not new, (
        f"split these (modules at most {MAX_MODULE_CHARS:,} non-blank characters, functions {MAX_FUNCTION_CHARS:,}):"
        f" {new}"
    )


def test_every_known_offender_is_still_one() -> None:
    """An entry that is no longer over its limit is removed from KNOWN, so that the list only shrinks (one test, not
    one per entry: an empty list would be an empty parameter set, a skip)."""
    found = dict(offenders())
    assert [where for where in KNOWN if where not in found] == [], "within the limits now: remove them from KNOWN"


def test_packing_lines_does_not_make_a_module_smaller(tmp_path: Path) -> None:
    """The same statements one a line or packed with semicolons count the same."""
    spread = tmp_path / "spread.py"
    spread.write_text("".join(f"x{i} = {i}\n" for i in range(10)))
    packed = tmp_path / "packed.py"
    packed.write_text(";".join(f"x{i}={i}" for i in range(10)) + "\n")
    assert visible_chars(spread.read_text()) + 9 == visible_chars(packed.read_text())  # the nine semicolons


def test_the_census_finds_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    def function(name: str, chars: int) -> str:  # `def name():` and a body of one string: `chars` characters in all
        head = f"def {name}():"
        return f"{head}\n    '{'y' * (chars - visible_chars(head) - 2)}'\n"

    short = tmp_path / "short.py"
    short.write_text(function("fits", MAX_FUNCTION_CHARS) + function("long", MAX_FUNCTION_CHARS + 1))
    long = tmp_path / "long.py"
    long.write_text(f"'{'z' * (MAX_MODULE_CHARS - 1)}'\n")
    assert offenders([short, long], tmp_path) == [
        ("short.py:long", MAX_FUNCTION_CHARS + 1),
        ("long.py", MAX_MODULE_CHARS + 1),
    ]
