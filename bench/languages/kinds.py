"""The languages by name: one line per module of bench/languages/."""

from __future__ import annotations

from bench.errors import FixtureError
from bench.languages.base import Language
from bench.languages.cpp import CPP
from bench.languages.go import GO
from bench.languages.java import JAVA
from bench.languages.javascript import JAVASCRIPT
from bench.languages.python import PYTHON
from bench.languages.rust import RUST

KINDS: dict[str, Language] = {language.name: language for language in (PYTHON, GO, RUST, CPP, JAVASCRIPT, JAVA)}
DEFAULT = "python"


def language(name: str) -> Language:
    """The language called `name`; FixtureError naming those there are."""
    found = KINDS.get(name)
    if found is None:
        raise FixtureError(f"unknown language {name!r}: one of {', '.join(KINDS)}")
    return found
