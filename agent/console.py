"""What the person watching sees: one short line per event worth seeing, printed as the trace records it.

Commands, tool arguments, server messages and model text reach the terminal only through `legible`: a control
character could otherwise move the cursor, erase the line or change colours, and a run of spaces push the rest of a
line out of sight, and show one command while another runs (at the y/N question of agent/approval.py too).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import unicodedata
from typing import Any

Event = dict[str, Any]
NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
MARKS = "\u27e8\u27e9"  # the brackets of a run of spaces written as its length: ⟨20000 spaces⟩
SPACE_RUN = re.compile(" {2,}")
PIECE = re.compile(" {2,}|.", re.DOTALL)  # what legible() shows as one: a run of spaces, or a character


def visible(text: str) -> str:
    """`text` with every character a terminal would not print as itself (control characters, escape sequences,
    line breaks, tabs, invisible and direction-changing characters) written as an escape such as `\\x1b`. When any is
    escaped, backslashes are doubled too, so the text shown reads back as exactly one text."""
    if text.isprintable():
        return text
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else _escape(c) for c in text)


def legible(text: str) -> str:
    """`visible(text)`, with every run of two or more spaces written as its length (`⟨20000 spaces⟩`), so that
    padding cannot push the rest of a text off the screen. The brackets are escaped where the text holds them, and
    backslashes doubled whenever anything is written differently, so the text shown reads back as exactly one text."""
    if "  " not in text and not any(mark in text for mark in MARKS):
        return visible(text)
    escaped = "".join("\\\\" if c == "\\" else c if c.isprintable() and c not in MARKS else _escape(c) for c in text)
    return SPACE_RUN.sub(lambda run: f"{MARKS[0]}{len(run[0])} spaces{MARKS[1]}", escaped)


def head(text: str, limit: int = 100) -> str:
    """The start of `text` that `legible` shows in at most `limit` characters, and its length where it is cut: a run
    of spaces counts as long as it is shown (`⟨2400 spaces⟩`), so padding cannot push the rest of a command out of
    its console line."""
    shown = 0
    for piece in PIECE.finditer(text):
        shown += len(legible(piece[0]))
        if shown > limit:
            return f"{text[: piece.start()]}… ({len(text)} characters)"
    return text


def fold(text: str, width: int) -> list[str]:
    """`text` (printable) in rows of at most `width` terminal cells: a wide character takes two, a combining one
    none."""
    rows, row, cells = [], "", 0
    for char in text:
        size = _cells(char)
        if row and cells + size > width:
            rows.append(row)
            row, cells = "", 0
        row += char
        cells += size
    return [*rows, row]


def _cells(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


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
        text = line.lstrip(" ")
        say(" " * (len(line) - len(text)) + legible(text))  # the indent is ours


def say(line: str, end: str = "\n") -> bool:
    """Print a line for the person; False when stdout is closed (a pipe whose reader went away). Then the run goes
    on without a console: stdout becomes /dev/null (nothing left in its buffer fails at exit either), and stderr
    says so once."""
    try:
        print(line, end=end, file=sys.stdout, flush=True)
        return True
    except (OSError, ValueError):  # ValueError: sys.stdout itself was closed
        pass
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("agent: stdout is closed; the run goes on, and the event trace records it", file=sys.stderr)
    return False


def describe(record: Event) -> str | None:
    describer = _DESCRIBERS.get(record["event"])
    return describer(record) if describer else None


def _start(r: Event) -> str:
    jeff = r["jeff"] or "off"
    line = (
        f"agent {r['agent_version']}: preset {r['preset']}, {r['n_ctx']}-token window, flint {r['flint']}, jeff {jeff}"
    )
    if r.get("unreadable"):
        skipped = ", ".join(r["unreadable"])
        line += f"; {len(r['unreadable'])} files or folders of the repository cannot be read and are skipped: {skipped}"
    return line


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
    target = head(str(args.get("path") or args.get("command") or ""))
    outcome = "refused" if r["refused"] else ("ok" if r["ok"] else f"error: {r['error']}")
    return f"  {r['name']} {target} -> {outcome}, {r['result_chars']} chars"


def _jeff(r: Event) -> str:
    return f"  jeff: {r['opinion']}" if r["opinion"] is not None else f"  jeff: no opinion ({r['error']})"


def _approval(r: Event) -> str | None:
    return None if r["by"] == "rule" else f"  {r['decision']} by {r['by']}: {head(r['command'])}"


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
