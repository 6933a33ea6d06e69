"""Every repository path the docs and the code's comments name exists, and nothing outside the repository is cited.

What counts as a path (kept simple on purpose):
- a token that starts with one of the repository's top folders (`agent/`, `bench/`, `docs/`, ... in TOP_FOLDERS)
  followed by letters, digits and `_ . / + -`, e.g. `bench/results/row.py` or `docs/`;
- a token with a placeholder (`fixtures/<name>/`, `results/{date}.csv`, `tests/*.py`) stops at the placeholder: the
  part before it is checked (`fixtures/`);
- `results/` is not a top folder here: it is where the bench writes (`results/runs/<run_id>/`, `results/after.csv`),
  so names under it are examples, not citations.
Where: the text of README.md and docs/**/*.md, and the comments and docstrings of the code in CODE_FOLDERS and of
TOP_FILES (the Makefile, compose.yaml, bench.yaml, ...). Strings in the code are not read: tests name missing paths
on purpose.
Outside the repository: `../shared/`, `DESIGN.md`, `STYLE.md` and `notes/*.md` must not be named anywhere in the
docs or the code (comments, docstrings and strings alike).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_FOLDERS = ("agent", "bench", "perf", "tests", "docs", "docker", "fixtures", "hidden_tests", "experiments", ".ci")
TOP_FOLDERS += (".github",)
# fixtures/ is task data, not read: its fixture.yaml is hashed into fixture_sha, a comparison key, so even a comment
# changed there would split every baseline.
CODE_FOLDERS = ("agent", "bench", "perf", "tests", ".ci", "docker", ".github", "experiments")
TOP_FILES = ("Makefile", "compose.yaml", "bench.yaml", ".env.example", "pyproject.toml", "predictions.yaml")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(f) for f in TOP_FOLDERS) + r")/[\w./+-]*)")
OUTSIDE = re.compile(r"\.\./shared/|\bDESIGN\.md|\bSTYLE\.md|(?<![\w/.])notes/[\w-]+\.md")
THIS_FILE = Path(__file__).resolve()
STATEMENT_START = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def python_comments(text: str) -> str:
    """The comments and docstrings (strings that stand as a statement of their own) of a Python source, joined."""
    parts, previous = [], tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and previous in STATEMENT_START):
            parts.append(tok.string)
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return "\n".join(parts)


def hash_comments(text: str) -> str:
    """The `#` comments of a shell script, a Dockerfile, a Makefile, YAML (a `#` that starts a word)."""
    return "\n".join(m.group(1) for m in re.finditer(r"(?:^|\s)#(.*)$", text, re.MULTILINE))


def code_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES]
    for folder in CODE_FOLDERS:
        files += [p for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in files if p.suffix not in (".pyc", ".png", ".csv", ".gguf", ".whl")]


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def citations(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".md":
        return text
    if path.suffix == ".py":
        try:
            return python_comments(text)
        except (SyntaxError, tokenize.TokenError):  # task data written broken on purpose
            return hash_comments(text)
    return hash_comments(text)


def named_paths(text: str) -> set[str]:
    return {m.group(1).rstrip(".") for m in PATH.finditer(text)}


def test_the_path_pattern_reads_what_it_should() -> None:
    text = "see bench/results/row.py, `fixtures/<name>/fixture.yaml` and results/runs/<id>/ or bench.results.docs"
    assert named_paths(text) == {"bench/results/row.py", "fixtures/"}
    assert OUTSIDE.search("cited from ../shared/notes/docker.md") and OUTSIDE.search("see DESIGN.md")
    assert not OUTSIDE.search("docs/results.md and bench/notes/x.py")
    source = 'def f():\n    """See bench/a.py."""\n    x = "bench/b.py"  # and bench/c.py\n    return x\n'
    assert named_paths(python_comments(source)) == {"bench/a.py", "bench/c.py"}


def test_every_path_the_docs_and_comments_name_exists() -> None:
    missing = []
    for source in [*doc_files(), *code_files()]:
        for name in sorted(named_paths(citations(source))):
            if not (ROOT / name).exists():
                missing.append(f"{source.relative_to(ROOT)}: {name}")
    assert not missing, "these name paths that are not in the repository:\n" + "\n".join(missing)


def test_nothing_outside_the_repository_is_cited() -> None:
    cited = []
    for source in [*doc_files(), *code_files()]:
        if source == THIS_FILE:
            continue
        for number, line in enumerate(source.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                cited.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not cited, "files outside the repository are cited:\n" + "\n".join(cited)
