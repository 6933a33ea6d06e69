"""Presets part2, clearing and part3 send the article's words, character for character.

The three texts are pinned here, copied from the article (Part 3: its clear_old and its cut note). Where the
article itself is at hand (the project's shared seed; not in CI), the pins are also compared with the article's code:
its f-strings are read with `ast`, so the comparison is with the text the article's code produces.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from agent_helpers import RunAgent

from agent import prompts
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

ARTICLE = Path("/work/shared/seed/part3-when-the-context-runs-out.txt")
CUT_NOTE = (
    "Your last answer was cut off or could not be read; it may have reached the end of the {size}-token context "
    "before you finished. Think briefly, and change files in small steps with edit_file instead of rewriting them "
    "whole."
)
CLEARED_RESULT = "[cleared to save context: {chars} characters. Call the tool again if you need it.]"
CLEARED_ARGUMENT = "[cleared: {chars} characters]"


def test_the_agent_uses_the_pinned_texts() -> None:
    assert prompts.cut_off_note(4096) == CUT_NOTE.format(size=4096)
    assert prompts.cleared_tool_result(1234) == CLEARED_RESULT.format(chars=1234)
    assert prompts.cleared_argument(56) == CLEARED_ARGUMENT.format(chars=56)


def article_text(code: str, names: dict[str, str]) -> str:
    """The text an f-string expression of the article produces, its {expressions} renamed by `names`."""
    node = ast.parse(f"({code.strip()})", mode="eval").body  # the cut note spans lines: parenthesize it
    parts = node.values if isinstance(node, ast.JoinedStr) else [node]
    text = ""
    for part in parts:
        if isinstance(part, ast.Constant):
            text += str(part.value)
        else:
            assert isinstance(part, ast.FormattedValue)
            text += "{" + names[ast.unparse(part.value)] + "}"
    return text


@pytest.mark.skipif(not ARTICLE.exists(), reason="the article is in the project's shared seed, not in the repository")
def test_the_pinned_texts_are_the_articles() -> None:
    article = ARTICLE.read_text(encoding="utf-8")
    result = re.search(r'm\["content"\] = (f"\[cleared to save context.*?")\n', article)
    argument = re.search(r'args\[k\] = (f"\[cleared: .*?")\n', article)
    note = re.search(r'"content": (f"Your last answer.*?")\}\)', article, re.DOTALL)
    assert result and argument and note, "the article's clear_old or cut note was not found"
    assert article_text(result.group(1), {"len(m['content'])": "chars"}) == CLEARED_RESULT
    assert article_text(argument.group(1), {"len(args[k])": "chars"}) == CLEARED_ARGUMENT
    assert article_text(note.group(1), {"size": "size"}) == CUT_NOTE
    assert '.startswith("[cleared")' in article and prompts.CLEARED_MARK == "[cleared"  # what is left alone


@pytest.mark.parametrize("preset", ["clearing", "part3"])
def test_the_article_presets_send_the_article_texts(run_agent: RunAgent, repo: Path, preset: str) -> None:
    (repo / "big.py").write_text("".join(f"VALUE_{i} = {i}  # filler to take room\n" for i in range(80)))
    script = [
        fl.tool_call("write_file", {"path": "notes.txt", "content": "N" * 900}),
        fl.tool_call("read_file", {"path": "big.py"}),
        fl.tool_call("read_file", {"path": "calc.py"}),
        fl.tool_call("read_file", {"path": "calc.py"}),
        fl.tool_call("read_file", {"path": "calc.py"}),
        fl.length_cut("Let me think about it " * 30),
        fl.prose("done"),
    ]
    with FakeLlama(script, n_ctx=2560) as flint:
        run_agent(repo, flint.url, "--preset", preset, "--max-steps", "7")
        sent = json.dumps([r["messages"] for r in flint.requests])
    assert json.dumps(CLEARED_RESULT.format(chars=len("Wrote 900 characters to notes.txt.")))[1:-1] in sent
    assert json.dumps(CLEARED_RESULT.format(chars=len((repo / "big.py").read_text())))[1:-1] in sent
    assert json.dumps(json.dumps(CLEARED_ARGUMENT.format(chars=900)))[1:-1] in sent  # inside the call's arguments
    assert (json.dumps(CUT_NOTE.format(size=2560))[1:-1] in sent) is (preset == "part3")
