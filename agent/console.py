"""What the person watching sees: one short line per event worth seeing, printed as the trace records it.

Commands, tool arguments, server messages and model text reach the terminal only through `visible`: a control
character could otherwise move the cursor, erase the line or change colours, and show one command while another
runs (at the y/N question of agent/approval.py too).
"""

from __future__ import annotations

import sys
from typing import Any

Event = dict[str, Any]
NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """`text` with every character a terminal would not print as itself (control characters, escape sequences,
    line breaks, tabs, invisible and direction-changing characters) written as an escape such as `\\x1b`. When any is
    escaped, backslashes are doubled too, so the text shown reads back as exactly one text."""
    if text.isprintable():
        return text
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    if char in NAMED_ESCAPES:
        return NAMED_ESCAPES[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def show(record: Event) -> None:
    try:
        line = describe(record)
    except (KeyError, TypeError, AttributeError, IndexError):  # a field cut down to its name (agent/trace.py)
        line = f"{record.get('event')}: (too large to show; see the trace)"
    if line is not None:
        print(visible(line), file=sys.stdout, flush=True)


def describe(record: Event) -> str | None:
    describer = _DESCRIBERS.get(record["event"])
    return describer(record) if describer else None


def _start(r: Event) -> str:
    jeff = r["jeff"] or "off"
    return (
        f"agent {r['agent_version']}: preset {r['preset']}, {r['n_ctx']}-token window, flint {r['flint']}, jeff {jeff}"
    )


def _response(r: Event) -> str:
    usage = r["usage"] if isinstance(r["usage"], dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens", "?") if isinstance(details, dict) else "?"
    return (
        f"step {r['step']}: {r['finish_reason']}, prompt {usage.get('prompt_tokens', '?')} tokens (cached {cached}), "
        f"answer {usage.get('completion_tokens', '?')}, window now {usage.get('total_tokens', '?')}, "
        f"{r['tool_calls']} tool call(s)"
    )


def _cut(r: Event) -> str:
    fate = "dropped" if r["dropped"] else "taken as the answer"
    return f"step {r['step']}: the answer was cut off ({r['kind']}); {fate}"


def _http_error(r: Event) -> str:
    attempt = f" (attempt {r['attempt']})" if r.get("attempt") else ""
    return f"step {r['step']}: server error {r['status'] or '-'} {r['type']}{attempt}: {r['message']}"


def _clear(r: Event) -> str:
    return f"step {r['step']}: cleared old material from {r['changed']} message(s) ({r['reason']})"


def _tool(r: Event) -> str:
    args = r["args"]
    target = str(args.get("path") or args.get("command") or "")[:100]
    outcome = "refused" if r["refused"] else ("ok" if r["ok"] else f"error: {r['error']}")
    return f"  {r['name']} {target} -> {outcome}, {r['result_chars']} chars"


def _jeff(r: Event) -> str:
    return f"  jeff: {r['opinion']}" if r["opinion"] is not None else f"  jeff: no opinion ({r['error']})"


def _approval(r: Event) -> str | None:
    return None if r["by"] == "rule" else f"  {r['decision']} by {r['by']}: {r['command'][:100]}"


def _done_check(r: Event) -> str:
    verdict = "passed" if r["passed"] else "not passed"
    missing = f"; missing: {', '.join(r['missing'])}" if r["missing"] else ""
    planted = f"; planted by the agent: {', '.join(r['planted'])}" if r.get("planted") else ""
    return f"step {r['step']}: done check {verdict} ({r['summary']}){missing}{planted}"


def _restored(r: Event) -> str:
    files = ", ".join(f"{f['path']} ({f['was']})" for f in r["files"])
    return f"  protected tests changed by {r['after']}, restored: {files}"


def _stop(r: Event) -> str:
    message = f": {r['message']}" if r["message"] else ""
    return f"stopped: {r['reason']} after {r['steps']} step(s){message}"


_DESCRIBERS = {
    "start": _start,
    "response": _response,
    "cut": _cut,
    "http_error": _http_error,
    "clear": _clear,
    "tool": _tool,
    "jeff": _jeff,
    "approval": _approval,
    "done_check": _done_check,
    "restored": _restored,
    "stop": _stop,
}
