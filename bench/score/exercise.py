"""An exercism exercise folder read (the layout of Aider's polyglot benchmark): `.meta/config.json` naming its solution
(stub), test, example and editor files, and `.docs/`; and the checks that refuse one before anything of it is
written (bench/score/exercism.py imports what passes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import FixtureError
from bench.languages.base import Language
from bench.languages.kinds import KINDS

CONFIG = Path(".meta/config.json")
DOCS = ("introduction.md", "instructions.md", "instructions.append.md")  # in .docs/, made into the task, in order


@dataclass
class Exercise:
    folder: Path
    solution: list[str]
    tests: list[str]  # test files (test_*.py, *_test.py)
    helpers: list[str]  # the config's other test files: modules the tests import
    editor: list[str]  # read-only files the stub and the tests share
    examples: dict[str, str] = field(default_factory=dict)  # solution file (or one it adds) -> example file
    blurb: str = ""
    language: str = "python"
    build: list[str] = field(default_factory=list)  # the language's build files the exercise has (go.mod)

    @property
    def name(self) -> str:
        return self.folder.name.replace("-", "_")


def exercises_in(source: Path) -> list[Path]:
    """An exercise folder, or the exercise folders inside `source` (a track's exercises/practice/)."""
    if (source / CONFIG).is_file():
        return [source]
    if not source.is_dir():
        raise FixtureError(f"{source} is not a folder")
    found = sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not found:
        raise FixtureError(f"{source}: no exercise folders in it (each has {CONFIG})")
    return found


def read_exercise(folder: Path) -> Exercise:
    """The exercise's files from its config; FixtureError naming why it cannot be a fixture."""
    try:
        config = json.loads((folder / CONFIG).read_text())
        files = config["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise FixtureError(f"no readable {CONFIG} with a files table ({type(e).__name__}: {e})") from e

    def listed(key: str) -> list[str]:
        value = files.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FixtureError(f"{CONFIG}: files.{key} is not a list of paths")
        return value

    solution, tests, examples, editor = listed("solution"), listed("test"), listed("example"), listed("editor")
    lang = refuse_paths(folder, solution, tests, examples, editor=editor)
    if not examples:
        raise FixtureError("no example solution (files.example): nothing shows the task can be done")
    pairs = pair_examples(solution, examples, editor)
    if not (folder / ".docs/instructions.md").is_file():
        raise FixtureError("no .docs/instructions.md")
    blurb = config.get("blurb", "")
    return Exercise(
        folder=folder,
        solution=solution,
        tests=[t for t in tests if lang.is_test_file(t)],
        helpers=[t for t in tests if not lang.is_test_file(t)],
        editor=editor,
        examples=pairs,
        blurb=blurb if isinstance(blurb, str) else "",
        language=lang.name,
        build=[rel for rel in lang.build_files if (folder / rel).is_file() and _inside(folder, rel)],
    )


def pair_examples(solution: list[str], examples: list[str], editor: list[str]) -> dict[str, str]:
    """Solution file -> example file: by name when each solution file has an example of its name, the example's
    other files going beside the first solution file as files the solution adds (Java's reference solutions add
    classes: bowling's Frame.java), except over an editor file, which grading writes in; else in order when they are
    as many; else by suffix (Rust's stub names its Cargo.toml too, for which there is no example: the stub's is
    the one)."""
    names = [Path(rel).name for rel in examples]
    by_name = {Path(rel).name: rel for rel in solution}
    if len(set(names)) == len(examples) and len(by_name) == len(solution) and set(by_name) <= set(names):
        beside = Path(solution[0]).parent
        pairs = {by_name.get(Path(rel).name, (beside / Path(rel).name).as_posix()): rel for rel in examples}
        return {target: rel for target, rel in pairs.items() if target in solution or target not in editor}
    if len(examples) == len(solution):
        return dict(zip(solution, examples, strict=True))
    by_suffix = {Path(rel).suffix: rel for rel in solution}
    suffixes = [Path(rel).suffix for rel in examples]
    if len(by_suffix) == len(solution) and len(set(suffixes)) == len(examples) and set(suffixes) <= set(by_suffix):
        return {by_suffix[Path(rel).suffix]: rel for rel in examples}
    raise FixtureError(f"{len(examples)} example files for {len(solution)} solution files: cannot pair them")


def language_of(named: list[str]) -> Language:
    """The language whose files the config names (Python when they are its); FixtureError when none has them all."""
    for lang in KINDS.values():
        if named and all(rel.endswith(lang.source_suffixes) for rel in named):
            return lang
    foreign = [rel for rel in named if not rel.endswith(KINDS["python"].source_suffixes)]
    others = ", ".join(name for name in KINDS if name != "python")
    raise FixtureError(f"not a Python exercise, nor one of {others} (files {', '.join(foreign)})")


def refuse_paths(
    folder: Path, solution: list[str], tests: list[str], examples: list[str], editor: list[str]
) -> Language:
    """The exercise's language; FixtureError when the config's paths leave the exercise, are of no language the bench
    grades, are missing, or hand the agent an example or a test as an editor file; or when a file of .docs/ links out
    of the exercise."""
    named = [*solution, *tests, *examples, *editor]
    outside = [rel for rel in named if Path(rel).is_absolute() or not _inside(folder, rel)]
    if outside:
        raise FixtureError(f"{CONFIG} names {', '.join(outside)}, outside the exercise")
    lang = language_of(named)
    if not solution or not [t for t in tests if lang.is_test_file(t)]:
        patterns = ", ".join(lang.test_patterns)
        raise FixtureError(f"{CONFIG} names no solution file or no test file ({patterns})")
    leaked = sorted({rel for rel in editor if _same_file(folder, rel, [*examples, *tests])})
    if leaked:
        raise FixtureError(f"{CONFIG} names {', '.join(leaked)} as an editor file, which the agent would get")
    docs = [
        f".docs/{name}" for name in DOCS if (folder / ".docs" / name).is_symlink() or (folder / ".docs" / name).exists()
    ]
    linked = [rel for rel in docs if not _inside(folder, rel)]
    if linked:
        raise FixtureError(f"{', '.join(linked)} leads outside the exercise")
    missing = [rel for rel in named if not (folder / rel).is_file()]
    if missing:
        raise FixtureError(f"missing {', '.join(missing)} (named in {CONFIG})")
    return lang


def _same_file(folder: Path, rel: str, others: list[str]) -> bool:
    """Whether `rel` (links followed) is one of `others`."""
    try:
        return (folder / rel).resolve() in {(folder / other).resolve() for other in others}
    except (OSError, RuntimeError):
        return True


def _inside(folder: Path, rel: str) -> bool:
    """Whether `rel` (links followed) stays within the exercise's folder."""
    try:
        return (folder / rel).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False
