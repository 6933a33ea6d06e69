"""`bench replay --check-checkpoints --against URL|embedded`: does this llama.cpp build keep an agent's prompt
cache across a user message? A check to run before upgrading llama.cpp (docs/compare.md).

The scripted conversation below has the shape that erased context checkpoints upstream (llama.cpp#24890): tool-call
turns, then a user message, then another tool turn. It is written as a run's folder (a request log, as the agent
writes one: agent/requests.py) and sent to the server like any recorded run (bench/replay/send.py). Every request's
prompt starts with the whole previous prompt, so a server that keeps its cache computes only what was added (and
the previous answer, where the template renders it otherwise than the model generated it); the reprocessing split
(bench/measure/reprocessing.py) counts the rest as `unexplained`: tokens the server had and computed again. Any
unexplained token fails the check. Each answer is cut at MAX_TOKENS (the recorded answers are what goes on), so the
check costs the prompt tokens: a few seconds on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.agents.article import TOOL_SPECS, RequestLog
from bench.analyze.table import markdown_table
from bench.llama.binaries import find_llama_server, find_small_model
from bench.llama.server_command import RECORD_KEY
from bench.replay.recorded import load_run
from bench.replay.send import Sent
from bench.replay.server_replay import AgainstOptions, replay_against
from bench.replay.targets import scratch, targets
from bench.servers.base import default_threads

MAX_TOKENS, N_CTX = 4, 2048
CODE = "\n".join(f"def option_{i}(args):\n    return args.get('option_{i}', {i})\n" for i in range(8))
TEST_OUTPUT = "....F\nFAILED tests/test_cli.py::test_verbose - AssertionError: no --verbose flag\n1 failed, 4 passed"


def _call(number: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _result(number: int, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"call_{number}", "content": text}


def conversation() -> list[list[dict[str, Any]]]:
    """The messages of each request, in order: three tool-call turns, a user message, one more tool turn."""
    turns = [
        [
            {"role": "system", "content": "You are a coding agent. Use the tools to change the repository."},
            {"role": "user", "content": "Add a --verbose flag to cli.py and make the tests pass."},
        ],
        [_call(1, "read_file", {"path": "cli.py"}), _result(1, CODE)],
        [_call(2, "edit_file", {"path": "cli.py", "old": "def option_0", "new": "def verbose"}), _result(2, "ok")],
        [_call(3, "run", {"command": "pytest -q"}), _result(3, TEST_OUTPUT)],
        [
            {"role": "assistant", "content": "The flag is in; one test still fails."},
            {"role": "user", "content": "Also print the version when --verbose is given."},
        ],
        [_call(4, "read_file", {"path": "tests/test_cli.py"}), _result(4, "def test_verbose():\n    assert True\n")],
    ]
    requests: list[list[dict[str, Any]]] = []
    messages: list[dict[str, Any]] = []
    for turn in turns:
        messages = [*messages, *turn]
        requests.append(messages)
    return requests


def write_run(folder: Path, embedded: bool = True) -> Path:
    """The conversation as a run's folder: its request log, a trace that names the window, and, for an `embedded`
    target, a run.json that serves it with the installed llama-server and the small model (--llama-server and
    --model replace them; a check against URLs alone needs neither installed)."""
    run_dir = folder / "checkpoint-check"
    run_dir.mkdir()
    log = RequestLog(run_dir / "events.requests.jsonl")
    rest = {"tools": TOOL_SPECS, "stream": False, "temperature": 0.0, "seed": 42, "max_tokens": MAX_TOKENS}
    for step, messages in enumerate(conversation(), start=1):
        log.sent(step, {"messages": messages, **rest})
    log.close()
    (run_dir / "events.jsonl").write_text(json.dumps({"t": 0.0, "event": "start", "n_ctx": N_CTX}) + "\n")
    if embedded:
        server = [str(find_llama_server()), "-m", str(find_small_model()), "-c", str(N_CTX)]
        server += ["-t", str(default_threads())]
        (run_dir / "run.json").write_text(json.dumps({RECORD_KEY: {"command": server}}))
    return run_dir


def verdict(sent: list[Sent]) -> tuple[bool, str]:
    """(passed, the line that says so)."""
    answered = [s for s in sent if s.status == 200]
    if len(answered) < len(sent) or any(s.unexplained is None for s in answered):
        errors = "; ".join(s.error for s in sent if s.error)[:300]
        return False, f"FAIL: not every request was answered and split, so the check cannot tell ({errors})"
    lost = [s for s in answered if s.unexplained]
    if lost:
        where = ", ".join(f"request {s.recorded.number}: {s.unexplained}" for s in lost)
        return False, (
            f"FAIL: the server computed again {sum(s.unexplained or 0 for s in lost)} tokens it had "
            f"cached ({where}): this build loses its prompt cache in an agent's conversation"
        )
    return True, "ok: every request reused all that the server had cached"


def table(sent: list[Sent]) -> str:
    lines = [
        [
            str(s.recorded.number),
            s.recorded.body["messages"][-1]["role"],
            *(_int(s.figure(k)) for k in ("cache_n", "prompt_n")),
            _int(s.unexplained),
        ]
        for s in sent
    ]
    return markdown_table(["request", "last message", "cache_n", "prompt_n", "unexplained"], lines)


def _int(value: float | int | None) -> str:
    return "n/a" if value is None else str(int(value))


def command(options: AgainstOptions) -> int:
    """Exit 0 when every set-up kept its cache, 1 when one lost some (or could not be checked)."""
    chosen = targets(options.against, options.llama_servers, options.model, options.server_args)
    failed = False
    with scratch() as folder:
        run = load_run(write_run(folder, embedded=any(target.url is None for target in chosen)))
        for target in chosen:
            sent, notes = replay_against([run], target, options.checkout)
            passed, line = verdict(sent)
            failed = failed or not passed
            print(f"## {target.label}\n\n{table(sent)}\n\n{line}\n")
            for note in notes:
                print(f"note: {note}")
    return 1 if failed else 0
