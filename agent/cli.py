"""`python -m agent`: the command line (the options documented in docs/agent.md).

Exit status: 0 = done (the done check passed), 1 = stopped without being done, 2 = usage or setup error.
Expected failures are one line on stderr; the event trace always ends with a `stop` line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from agent import console
from agent.actions import Actions
from agent.approval import APPROVE_MODES, Approver
from agent.command_user import become_agent_user, check_can_switch
from agent.console import visible
from agent.done import pytest_missing, take_snapshot
from agent.endings import Terminated, ending_on_signals
from agent.guards import ProtectedTests
from agent.jeff import Jeff
from agent.jeff_first import JeffActor
from agent.loop import Agent, RunConfig, Stop
from agent.presets import PRESETS, Preset
from agent.reaper import Leftovers
from agent.requests import RequestLog, beside
from agent.server import ChatClient, Props, SetupError, read_props
from agent.summary import JeffWriter
from agent.tools import Workspace, unreadable_paths
from agent.trace import Trace, agent_version

DEFAULT_FLINT = "http://127.0.0.1:8080"
DEFAULT_SAMPLING = '{"temperature": 0.0, "seed": 42}'


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        check_can_switch()
        task = read_task(args)
    except SystemExit as e:  # argparse has printed the usage error (or --help)
        return int(e.code or 0)
    except UsageError as e:
        print(f"agent: {visible(str(e))}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"agent: cannot run commands as another user: {visible(str(e))}", file=sys.stderr)
        return 2
    try:
        trace = Trace(args.events, echo=console.show)
        requests = RequestLog(beside(args.events))  # opened now, as the trace is: before the user changes
    except OSError as e:
        print(f"agent: cannot write the event trace {visible(str(args.events))}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        become_agent_user()  # after the trace is open, so that the model's commands cannot write it
    except (OSError, ValueError) as e:
        print(f"agent: cannot run commands as another user: {visible(str(e))}", file=sys.stderr)
        trace.close()
        return 2
    with ending_on_signals():
        return run(args, task, trace, requests)


class UsageError(Exception):
    """A command-line value that cannot be used; the message says what to pass instead."""


def run(args: argparse.Namespace, task: str, trace: Trace, requests: RequestLog | None = None) -> int:
    """Read the server's window, run the loop, and end the trace with `stop` whatever happens."""
    stop = Stop("interrupted", "the agent did not finish")
    agent: Agent | None = None
    exit_code = 1
    try:
        props = read_props(args.flint)
        with Leftovers() as leftovers:  # what the commands leave running is ended before each check and at the end
            agent = build_agent(args=args, task=task, props=props, trace=trace, requests=requests, leftovers=leftovers)
            stop = agent.run()
        exit_code = 0 if stop.reason == "done" else 1
    except SetupError as e:
        print(f"agent: {visible(str(e))}", file=sys.stderr)
        stop, exit_code = Stop("server_error", str(e)), 2
    except KeyboardInterrupt:
        stop = Stop("interrupted", "interrupted by the user (Ctrl-C)")
    except Terminated as e:
        stop = Stop("interrupted", str(e))
    except OSError as e:  # the machine refused something the run needed (a folder of the repository went away)
        print(f"agent: {visible(str(e))}", file=sys.stderr)
        stop = Stop("interrupted", f"error: {e}")
    except BaseException as e:  # a bug: the trace still ends properly, and the traceback is kept
        stop = Stop("interrupted", f"internal error: {type(e).__name__}: {e}")
        raise
    finally:
        trace.emit("stop", reason=stop.reason, steps=agent.step if agent else 0, message=stop.message)
        trace.close()
        if requests is not None:
            requests.close()
        if trace.error is not None:
            print(f"agent: {visible(trace.error)}", file=sys.stderr)
    return exit_code


def build_agent(
    args: argparse.Namespace,
    task: str,
    props: Props,
    trace: Trace,
    requests: RequestLog | None = None,
    leftovers: Leftovers | None = None,
) -> Agent:
    preset = PRESETS[args.preset]
    jeff_window = read_props(args.jeff).n_ctx if preset.summary_by == "jeff" or preset.jeff_acts else None
    unreadable = unreadable_paths(Path(os.path.realpath(args.repo)))
    trace.emit("start", **start_fields(args, props), unreadable=unreadable, jeff_n_ctx=jeff_window)
    if props.supports_tool_calls is False:
        console.say("note: the model's chat template has no tool-call support, so expect answers without tool calls")
    workspace = Workspace(args.repo, args.command_timeout, leftovers, tuple(args.test_patterns))
    config = RunConfig(
        task=task,
        preset=preset,
        n_ctx=props.n_ctx,
        flint_url=args.flint,
        keep=args.keep,
        clear_at=clear_at(args),
        max_steps=args.max_steps,
        sampling=args.sampling,
        command_timeout=args.command_timeout,
        test_command=args.test_command,
    )
    actions = Actions(
        workspace,
        guard=ProtectedTests(workspace.root, workspace.protected),
        approver=Approver(args.approve, workspace.root, test_command=args.test_command),
        jeff=Jeff(args.jeff, timeout=args.jeff_timeout) if args.jeff else None,
        trace=trace,
    )
    return Agent(
        config,
        flint=ChatClient(
            args.flint,
            timeout=args.request_timeout,
            retries=args.retries,
            retry_delay=args.retry_delay,
            article_parse_rule=preset.article_parse_rule,
        ),
        actions=actions,
        snapshot=take_snapshot(workspace.root),
        trace=trace,
        requests=requests,
        summary_writer=summary_writer(args, preset, jeff_window),
        jeff_actor=jeff_actor(args, preset),
    )


def summary_writer(args: argparse.Namespace, preset: Preset, jeff_window: int | None) -> JeffWriter | None:
    """Jeff as the writer of summaries (summary-jeff), in his window (his /props); None: Flint writes them."""
    if preset.summary_by != "jeff" or jeff_window is None:
        return None
    client = ChatClient(args.jeff, timeout=args.request_timeout, retries=args.retries, retry_delay=args.retry_delay)
    return JeffWriter(client, jeff_window)


def jeff_actor(args: argparse.Namespace, preset: Preset) -> JeffActor | None:
    """Jeff taking steps (jeff-first, jeff-gate) with Flint's tools, at Flint's request timeout."""
    if preset.jeff_acts is None:
        return None
    client = ChatClient(args.jeff, timeout=args.request_timeout, retries=args.retries, retry_delay=args.retry_delay)
    return JeffActor(client, preset.jeff_acts, args.jeff_steps)


def clear_at(args: argparse.Namespace) -> float:
    """The threshold in force: the preset's own (late), else --clear-at."""
    return float(PRESETS[args.preset].clear_threshold(args.clear_at))


def start_fields(args: argparse.Namespace, props: Props) -> dict[str, Any]:
    return {
        "preset": args.preset,
        "n_ctx": props.n_ctx,
        "flint": args.flint,
        "jeff": args.jeff,
        "jeff_timeout": args.jeff_timeout,
        "request_timeout": args.request_timeout,
        "flint_model": props.model,
        "flint_build": props.build,
        "supports_tool_calls": props.supports_tool_calls,
        "keep": args.keep,
        "clear_at": clear_at(args),
        "max_steps": args.max_steps,
        "jeff_steps": args.jeff_steps,
        "approve": args.approve,
        "sampling": args.sampling,
        "agent_version": agent_version(),
    }


def read_task(args: argparse.Namespace) -> str:
    """The task text, after the checks argparse cannot make (these exit 2)."""
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo} is not a folder: pass the repository the agent should work in")
    if args.approve == "jeff" and not args.jeff:
        raise UsageError("--approve jeff needs a Jeff server: pass --jeff URL or set JEFF_URL")
    if PRESETS[args.preset].summary_by == "jeff" and not args.jeff:
        raise UsageError(f"--preset {args.preset} has Jeff write summaries: pass --jeff URL or set JEFF_URL")
    if PRESETS[args.preset].jeff_acts and not args.jeff:
        raise UsageError(f"--preset {args.preset} has Jeff take steps: pass --jeff URL or set JEFF_URL")
    if args.task_file is None:
        task = str(args.task)
    else:
        try:
            task = args.task_file.read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read --task-file {args.task_file}: {e.strerror}") from None
    if not task.strip():
        raise UsageError("the task is empty: pass --task TEXT or a non-empty --task-file")
    missing = None if args.test_command else pytest_missing()  # last: it asks the interpreter for its own path
    if missing:
        raise UsageError(f"{missing}; the done check needs it")
    return task


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent", description="A coding agent (Flint, with Jeff's opinions) working against llama-server."
    )
    parser.add_argument("--repo", type=Path, required=True, help="the repository to work in")
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--task", help="the task, as text")
    task.add_argument("--task-file", type=Path, help="the task, from a file")
    parser.add_argument("--flint", default=os.environ.get("FLINT_URL") or DEFAULT_FLINT, help="Flint's llama-server")
    jeff = parser.add_mutually_exclusive_group()
    jeff.add_argument("--jeff", default=os.environ.get("JEFF_URL") or None, help="Jeff's llama-server")
    jeff.add_argument(
        "--no-jeff", dest="jeff", action="store_const", const=None, help="no Jeff, even if JEFF_URL is set"
    )
    add_preset_options(parser)
    parser.add_argument("--max-steps", type=_whole_number(1), default=30)
    default_approve = "ask" if sys.stdin is not None and sys.stdin.isatty() else "no"
    parser.add_argument("--approve", choices=APPROVE_MODES, default=default_approve)
    parser.add_argument("--events", type=Path, help="write the JSON-lines event trace here")
    parser.add_argument("--sampling", type=_json_object, default=_json_object(DEFAULT_SAMPLING))
    parser.add_argument("--retries", type=_whole_number(0), default=4, help="retries after a transport failure")
    parser.add_argument("--retry-delay", type=_seconds, default=1.0, help="first pause between retries (doubles)")
    parser.add_argument("--command-timeout", type=_limit, default=120.0, help="limit for each command and pytest")
    parser.add_argument(
        "--test-command", default="", help="the done check runs this (another language's tests) instead of pytest"
    )
    parser.add_argument(
        "--test-patterns",
        nargs="*",
        default=[],
        help="the test files' names (a pattern with / matches the path) that stay as they are, for another language",
    )
    parser.add_argument("--request-timeout", type=_limit, default=900.0, help="limit for each request to Flint")
    parser.add_argument(
        "--jeff-timeout", type=_limit, default=10.0, help="limit for each of Jeff's opinions (default 10 s)"
    )
    return parser


def add_preset_options(parser: argparse.ArgumentParser) -> None:
    """The preset and the settings it reads."""
    parser.add_argument("--preset", choices=sorted(PRESETS), default="part3")
    parser.add_argument(
        "--keep", type=_whole_number(0), default=2, help="newest tool results never cleared (default 2)"
    )
    parser.add_argument("--clear-at", type=_fraction, default=0.5, help="clear past this share of the window")
    parser.add_argument(
        "--jeff-steps", type=_whole_number(0), default=3, help="jeff-first: Jeff's steps before Flint takes over (3)"
    )


def _whole_number(minimum: int) -> Any:
    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
        return int(text)

    return parse


def _fraction(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction of the window in (0, 1], got {text!r}")
    return value


def _seconds(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def _limit(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"temperature\": 0}}', got {text!r}")
    return value
