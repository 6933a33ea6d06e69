"""One run's page of the viewer, as data: step by step what the model said and what each tool returned, from the
run's trace (`events.jsonl`) and its request log (`events.requests.jsonl`, bench.measure.request_log), with the
clearings where they happened, the run's diff and each graded test's outcome with its message (score.json's tests,
the messages from the junit XML).

The request log holds every body sent to Flint. What request r+1 added after request r's messages is what step r's
answer brought: the model's message (its text, its reasoning where the server returned it, its tool calls with their
arguments) and the tool results, as they were sent back. The last answer is never sent back, so its text is not in
the log (the trace still has its calls). A clearing is what changed in the messages from the request before it to
the one after it. Jeff's opinion is put beside the command it was about. Long texts are cut at TEXT_LIMIT.

Everything here is model- or tool-written: the page sets it as text, never as markup (bench.analyze.view_page).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from bench.errors import ResultsError
from bench.measure.request_log import RequestBodies, load_request_log
from bench.measure.trace import Event

TEXT_LIMIT = 20_000  # characters of one text kept in the page; the rest is counted
DIFF_LIMIT = 200_000
JUNIT_FILES = ("junit.xml", "junit-visible.xml")
Item = dict[str, Any]


def cut(text: object, limit: int = TEXT_LIMIT) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def request_log_of(run_dir: Path) -> tuple[RequestBodies | None, str]:
    """The run's request bodies, and why they are missing or partial ("" when whole)."""
    try:
        bodies = load_request_log(run_dir)
    except ResultsError as e:
        return None, f"request log unreadable: {e}"
    if bodies is None:
        return None, "no request log beside the trace (an older agent): the model's messages are not shown"
    return bodies, "" if bodies.complete else "the request log stopped at its size cap: later steps show no messages"


def added_after(bodies: RequestBodies, request: object) -> list[dict[str, Any]] | None:
    """The messages request `request` + 1 added after request `request`'s own; None when there is no such request."""
    if not isinstance(request, int) or isinstance(request, bool):
        return None
    body, after = bodies.get(request), bodies.get(request + 1)
    if body is None or after is None:
        return None
    return list(after["messages"][len(body["messages"]) :])


def message_of(added: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The model's message among what its answer added: text, reasoning, tool calls with arguments."""
    message = next((m for m in added or [] if m.get("role") == "assistant"), None)
    if message is None:
        return None
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append({"name": str(function.get("name")), "arguments": cut(function.get("arguments") or "")})
    return {
        "content": cut(message.get("content") or ""),
        "reasoning": cut(message.get("reasoning_content") or ""),
        "tool_calls": calls,
    }


def tool_results(added: list[dict[str, Any]] | None) -> list[str]:
    """The tool results the answer's calls brought, in the order of the calls."""
    return [cut(m.get("content") or "") for m in added or [] if m.get("role") == "tool"]


def cleared(bodies: RequestBodies | None, before: int | None) -> list[Item]:
    """What a clearing between request `before` and the next changed: per message, its role, sizes and new text."""
    if bodies is None or before is None:
        return []
    old, new = bodies.get(before), bodies.get(before + 1)
    if old is None or new is None:
        return []
    changes = []
    for index, (was, now) in enumerate(zip(old["messages"], new["messages"], strict=False)):
        if was == now:
            continue
        what = _role(was)
        before_chars, after_chars = len(json.dumps(was, ensure_ascii=False)), len(json.dumps(now, ensure_ascii=False))
        shown = now.get("content") if isinstance(now.get("content"), str) and now.get("content") else ""
        changes.append(
            {
                "message": index,
                "what": what,
                "before_chars": before_chars,
                "after_chars": after_chars,
                "now": cut(shown or "(arguments or reasoning shortened)", 500),
            }
        )
    return changes


def _role(message: dict[str, Any]) -> str:
    """`tool`, `assistant (tool calls: write_file)`."""
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list) or not calls:
        return str(message.get("role"))
    names = [str((c.get("function") or {}).get("name")) for c in calls if isinstance(c, dict)]
    return f"assistant (tool calls: {', '.join(names)})"


def graded_tests(run_dir: Path) -> list[Item]:
    """Each graded test (score.json's: the hidden tests and the repository's own, never the canaries planted beside
    them) with its outcome and, for one that did not pass, its message from the run's junit XML."""
    try:
        outcomes = json.loads((run_dir / "score.json").read_text(encoding="utf-8")).get("outcomes")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(outcomes, dict):
        return []
    messages = junit_messages(run_dir)
    found = []
    for test, outcome in outcomes.items():
        dotted = ".".join([str(test).split("::")[0].removesuffix(".py").replace("/", "."), *str(test).split("::")[1:]])
        session, message = messages.get(dotted, ("", ""))
        found.append({"session": session, "test": str(test), "outcome": str(outcome), "message": message})
    return found


def junit_messages(run_dir: Path) -> dict[str, tuple[str, str]]:
    """Per junit test case (`classname.name`, dotted): its session (hidden, visible) and its failure's message."""
    found: dict[str, tuple[str, str]] = {}
    for name in JUNIT_FILES:
        try:
            root = ElementTree.fromstring((run_dir / name).read_text(encoding="utf-8", errors="replace"))
        except (OSError, ElementTree.ParseError):
            continue
        session = "visible" if "visible" in name else "hidden"
        for case in root.iter("testcase"):
            dotted = ".".join(p for p in (case.get("classname", ""), case.get("name", "")) if p)
            problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
            message = "" if problem is None else f"{problem.get('message', '')}\n{problem.text or ''}".strip()
            if dotted not in found or message:
                found[dotted] = (session, cut(message, 4000))
    return found


def run_diff(run_dir: Path) -> str | None:
    try:
        return cut((run_dir / "diff.patch").read_text(encoding="utf-8", errors="replace"), DIFF_LIMIT)
    except OSError:
        return None


def with_opinions(items: list[Item]) -> list[Item]:
    """Jeff's opinion put beside the command it was about (the run call of the same command in the step)."""
    opinions = [item for item in items if item["kind"] == "jeff"]
    for item in items:
        if item["kind"] != "tool" or item.get("name") != "run":
            continue
        match = next((o for o in opinions if o.get("command") == item.get("command")), None)
        if match is not None:
            item["jeff"] = match["opinion"]
            opinions.remove(match)
            match["beside"] = True
    return [item for item in items if not item.get("beside")]


def attach_texts(steps: list[Item], events: list[Event], bodies: RequestBodies | None) -> None:
    """Each step's model message and tool results from the request log; each clearing's changes."""
    by_number = {step["step"]: step for step in steps}
    last_request: int | None = None
    for event in events:
        kind, number = event.get("event"), event.get("step")
        if kind in ("response", "http_error") and isinstance(event.get("request"), int):
            last_request = event["request"]
        step = by_number.get(number) if isinstance(number, int) else None
        if step is None:
            continue
        if kind == "response":
            added = added_after(bodies, event.get("request")) if bodies else None
            step["message"], step["results"] = message_of(added), tool_results(added)
            step["sent_back"] = added is not None  # a request followed: the answer's aftermath is in the log
        elif kind == "clear":
            step.setdefault("clearings", []).append(cleared(bodies, last_request))
