"""Carrying out Flint's tool calls: Jeff's opinion and the approval for commands, the tool itself, and afterwards
the check that the repository's own tests are still as they were (agent/guards.py), each recorded in the trace.
"""

from __future__ import annotations

import time
from typing import Any

from agent import prompts
from agent.approval import Approver
from agent.guards import ProtectedTests, Restored
from agent.jeff import Jeff
from agent.tools import TOOL_ARGS, ToolCallError, ToolResult, Workspace, parse_arguments, summarize_args
from agent.trace import Trace


def restored_note(restored: list[Restored]) -> str:
    """What the model is told when something it did changed a protected test (which is now back)."""
    return prompts.protected_restored([r.describe() for r in restored]) if restored else ""


class Actions:
    def __init__(
        self, workspace: Workspace, guard: ProtectedTests, approver: Approver, jeff: Jeff | None, trace: Trace
    ) -> None:
        self.workspace = workspace
        self.guard = guard
        self.approver = approver
        self.jeff = jeff
        self.trace = trace

    def run(self, step: int, name: str, raw: object) -> str:
        """Carry out one call; returns the tool result for the model, with a note if tests had to be restored."""
        result = self.run_tool(step, name, raw)
        return result.text + restored_note(self.restore_tests(step, name))

    def restore_tests(self, step: int, after: str) -> list[Restored]:
        """Put back protected tests that `after` (a tool, or the done check) changed, and record it."""
        restored = self.guard.restore_changes()
        if restored:
            files = [{"path": r.path, "was": r.was} for r in restored]
            self.trace.emit("restored", step=step, after=after, files=files)
        return restored

    def run_tool(self, step: int, name: str, raw: object) -> ToolResult:
        started = time.monotonic()
        args: dict[str, Any] = {}
        if name not in TOOL_ARGS:
            result = ToolResult(prompts.unknown_tool(name, list(TOOL_ARGS)), ok=False, error="unknown tool")
        else:
            try:
                args = parse_arguments(name, raw)
                run = name == "run"
                result = self.run_command(step, args["command"]) if run else self.workspace.call(name, args)
            except ToolCallError as e:
                result = ToolResult(str(e), ok=False, error=str(e))
        self.trace.emit(
            "tool",
            step=step,
            name=name,
            args=summarize_args(args),
            ok=result.ok,
            result_chars=len(result.text),
            truncated=result.truncated,
            refused=result.refused,
            error=result.error,
            seconds=round(time.monotonic() - started, 3),
        )
        return result

    def run_command(self, step: int, command: str) -> ToolResult:
        """Jeff comments first; the command runs only if the rules, the flag, the user or Jeff allow it."""
        opinion = self.ask_jeff(step, command)
        decision, by = self.approver.decide(command, opinion)
        self.trace.emit("approval", step=step, command=command, decision=decision, by=by)
        if decision != "run":
            return ToolResult(prompts.refused_command(command, by), ok=False, refused=True, error=f"refused by {by}")
        return self.workspace.call("run", {"command": command})

    def ask_jeff(self, step: int, command: str) -> str | None:
        if self.jeff is None:
            return None
        opinion = self.jeff.opinion(command)
        self.trace.emit(
            "jeff",
            step=step,
            command=command,
            opinion=opinion.text,
            seconds=round(opinion.seconds, 3),
            usage=opinion.usage,
            timings=opinion.timings,
            error=opinion.error,
        )
        return opinion.text
