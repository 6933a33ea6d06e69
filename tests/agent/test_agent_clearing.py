"""clear_old: what is cleared, what stays, and that the conversation keeps its shape."""

from __future__ import annotations

import copy
import json
from typing import Any

from agent.clearing import clear_old, is_placeholder

FILE_TEXT = "def add(a, b):\n    return a + b\n" * 20


def call(call_id: str, name: str, **args: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def asks(reasoning: str, tool_call: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": [tool_call]}


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def conversation() -> list[dict[str, Any]]:
    """system, task, then four tool rounds: read, write, edit, run; every answer has reasoning."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Add sub."},
        asks("I should read it.", call("a", "read_file", path="calc.py")),
        result("a", FILE_TEXT),
        asks("Rewrite.", call("b", "write_file", path="calc.py", content=FILE_TEXT)),
        result("b", "Wrote 660 characters to calc.py."),
        {"role": "user", "content": "The tests do not pass."},
        asks("Small fix.", call("c", "edit_file", path="calc.py", old="a + b", new="a - b")),
        result("c", "Edited calc.py."),
        asks("Check.", call("d", "run", command="pytest -q")),
        result("d", "1 passed\n[exit code 0]"),
    ]


def arguments(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(message["tool_calls"][0]["function"]["arguments"])


def test_the_newest_two_tool_results_stay_whole_and_older_ones_become_placeholders() -> None:
    messages = conversation()
    clear_old(messages, keep=2)
    assert messages[8]["content"] == "Edited calc.py."
    assert messages[10]["content"] == "1 passed\n[exit code 0]"
    assert is_placeholder(messages[3]["content"]) and is_placeholder(messages[5]["content"])
    # the article's words for every tool: nothing tells the model to call write_file again
    assert messages[3]["content"] == (
        f"[cleared to save context: {len(FILE_TEXT)} characters. Call the tool again if you need it.]"
    )
    assert messages[5]["content"] == "[cleared to save context: 32 characters. Call the tool again if you need it.]"


def test_reasoning_before_the_kept_results_is_dropped_and_after_it_kept() -> None:
    messages = conversation()
    clear_old(messages, keep=2)  # kept: the results at 8 and 10; everything before index 8 is old
    assert [("reasoning_content" in messages[i]) for i in (2, 4, 7, 9)] == [False, False, False, True]


def test_old_write_and_edit_arguments_become_their_length_and_read_arguments_stay() -> None:
    messages = conversation()
    clear_old(messages, keep=1)  # the edit at index 7 is now old too
    write = arguments(messages[4])
    edit = arguments(messages[7])
    assert write["path"] == "calc.py" and write["content"] == f"[cleared: {len(FILE_TEXT)} characters]"
    assert edit == {"path": "calc.py", "old": "[cleared: 5 characters]", "new": "[cleared: 5 characters]"}
    assert arguments(messages[2]) == {"path": "calc.py"}


def test_order_roles_and_tool_call_pairing_are_unchanged() -> None:
    messages = conversation()
    before = copy.deepcopy(messages)
    clear_old(messages, keep=2)
    assert [m["role"] for m in messages] == [m["role"] for m in before]
    assert [m.get("tool_call_id") for m in messages] == [m.get("tool_call_id") for m in before]
    assert [[c["id"] for c in m.get("tool_calls", [])] for m in messages] == [
        [c["id"] for c in m.get("tool_calls", [])] for m in before
    ]
    assert messages[:2] == before[:2] and messages[6] == before[6]  # system, task and user notes are kept


def test_counts_changed_messages_and_a_second_clear_changes_nothing() -> None:
    messages = conversation()
    assert clear_old(messages, keep=2) == 5  # three assistants before index 8 and two tool results
    snapshot = copy.deepcopy(messages)
    assert clear_old(messages, keep=2) == 0
    assert messages == snapshot


def test_nothing_to_clear_with_keep_or_fewer_tool_results() -> None:
    messages = conversation()[:6]  # two tool results
    before = copy.deepcopy(messages)
    assert clear_old(messages, keep=2) == 0
    assert messages == before


def test_keep_zero_clears_every_tool_result() -> None:
    messages = conversation()
    clear_old(messages, keep=0)
    assert all(is_placeholder(m["content"]) for m in messages if m["role"] == "tool")
    assert not any("reasoning_content" in m for m in messages)


def test_text_that_already_starts_like_a_placeholder_is_left_as_the_article_left_it() -> None:
    messages = conversation()
    messages[3]["content"] = "[cleared by hand] but long " * 20
    clear_old(messages, keep=2)
    assert messages[3]["content"] == "[cleared by hand] but long " * 20


def test_done_outputs_all_but_the_newest_are_cleared_when_given() -> None:
    messages = conversation()[:6]  # two tool results: nothing old to clear by the article's rule
    outputs = []
    for n in range(3):
        messages.append({"role": "user", "content": f"pytest says: {n} failed " * 10})
        outputs.append(len(messages) - 1)
    newest = messages[-1]["content"]
    assert clear_old(messages, keep=2, done_outputs=outputs) == 2
    assert [messages[i]["content"] for i in outputs[:2]] == [
        f"[cleared to save context: {len(f'pytest says: {n} failed ' * 10)} characters of test output from an "
        "earlier done check.]"
        for n in range(2)
    ]
    assert messages[-1]["content"] == newest and clear_old(messages, keep=2, done_outputs=outputs) == 0


def test_unreadable_arguments_in_history_are_left_alone() -> None:
    messages = conversation()
    messages[4]["tool_calls"][0]["function"]["arguments"] = "{}"
    clear_old(messages, keep=2)
    assert messages[4]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert "reasoning_content" not in messages[4]


def test_old_arguments_are_written_back_re_serialized_as_the_article_did() -> None:
    messages = conversation()
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"path":"calc.py"}'  # llama-server's compact JSON
    del messages[2]["reasoning_content"]
    clear_old(messages, keep=2)
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "calc.py"}'
    assert clear_old(messages, keep=2) == 0
