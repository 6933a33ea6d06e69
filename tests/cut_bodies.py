"""The real llama-server's bodies for an answer cut at the end of the window, captured from this project's build.

Flint is served forced to call tools (bench/llama/forced_tools.py) at a small window; the user message is padded
so that the prompt ends k tokens before the window, for a few k short of a whole call, so the call is cut where it
can be: inside `<function=NAME` (the start of the call left in `content`), inside the JSON arguments (a
`tool_calls` entry with truncated `arguments`), and after the call (a complete call with finish_reason "length").
Without the grammar, the model's prose under the same template gives the HTTP 500 "does not match the expected
peg-native format", the same class of body as the 500 of the article's older build for a cut call.

tests/agent/data/cut_bodies.json holds one body of each shape, written by `python tests/cut_bodies.py`; the agent's
tests play them back, and tests/integration/test_cut_bodies_real.py checks that this build still answers so.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent import prompts  # noqa: E402
from bench.fixtures.fixture import load_fixture  # noqa: E402
from bench.llama.binaries import find_small_model  # noqa: E402
from bench.llama.forced_tools import write_serving_files  # noqa: E402
from bench.llama.process import LlamaProcess  # noqa: E402

STORED = ROOT / "tests" / "agent" / "data" / "cut_bodies.json"
CTX = 512
# The bodies were captured on llama.cpp's default threads (on one thread the model writes other calls). Its threads
# spin at each barrier, so beside another busy process they wait out each other's time slices: with one core taken by
# a busy loop the capture took 540 s instead of 12. A high priority (root only; elsewhere llama.cpp warns and goes on)
# keeps them on the cores, and the busy loop cost the capture nothing.
SERVER_ARGS = ["--prio", "2"]
SHAPES = ("partial name in content", "truncated arguments", "complete call", "500 of the template without grammar")


def shape_of(status: int, body: dict[str, Any]) -> str | None:
    """Which shape of a cut answer a body is; None for an answer that was not cut."""
    if status == 500:
        return SHAPES[3]
    choice = body["choices"][0]
    if choice["finish_reason"] != "length":
        return None
    calls = choice["message"].get("tool_calls") or []
    if not calls:
        content = choice["message"].get("content") or ""
        return SHAPES[0] if content and (content.startswith("<function=") or "<function=".startswith(content)) else None
    try:
        json.loads(calls[0]["function"]["arguments"])
    except ValueError:
        return SHAPES[1]
    return SHAPES[2]


def request(pad: int) -> dict[str, Any]:
    task = "Fix the bug. " + "x " * pad
    messages = [{"role": "system", "content": prompts.SYSTEM_PROMPT}, {"role": "user", "content": task}]
    return {"messages": messages, "tools": prompts.TOOL_SPECS, "temperature": 0.0, "seed": 42}


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = httpx.post(url + "/v1/chat/completions", json=body, timeout=120)
    return response.status_code, response.json()


@functools.cache  # one server per url: a padding's length asked again (each search starts at 0 and 10) is known
def prompt_tokens(url: str, pad: int) -> int:
    status, body = post(url, request(pad) | {"max_tokens": 1})
    assert status == 200, body
    return int(body["usage"]["prompt_tokens"])


def padding_for(url: str, prompt: int) -> int:
    """The padding that makes the prompt `prompt` tokens long, or the longest below it."""
    base, ten = prompt_tokens(url, 0), prompt_tokens(url, 10)
    pad = max(0, round((prompt - base) * 10 / (ten - base)))
    while pad > 0 and prompt_tokens(url, pad) > prompt:
        pad -= 1
    while prompt_tokens(url, pad + 1) <= prompt:
        pad += 1
    return pad


def capture(folder: Path) -> dict[str, dict[str, Any]]:
    """One real body of each shape, keyed by shape."""
    files = write_serving_files(folder / "serving", CTX, [load_fixture("todo_repo", ROOT)], ROOT)
    found: dict[str, dict[str, Any]] = {}
    flint = LlamaProcess(find_small_model(), CTX, folder / "flint.log", extra_args=[*files.llama_args(), *SERVER_ARGS])
    flint.start(120)
    try:
        # With room to spare the whole call fits: its length says where to cut it.
        status, whole = post(flint.url, request(padding_for(flint.url, CTX - 64)))
        assert status == 200 and whole["choices"][0]["finish_reason"] == "tool_calls", whole
        length = int(whole["usage"]["completion_tokens"])
        # The room left between the prompt and the end of the window: just short of the whole call (complete, or
        # its arguments cut near their end), half of it (inside the arguments), and inside `<function=NAME`.
        for room in (length - 1, length - 2, length - 3, length // 2, 11, 8, 5):
            status, body = post(flint.url, request(padding_for(flint.url, CTX - room)))
            shape = shape_of(status, body)
            if shape:
                found.setdefault(shape, body)
            if len(found) == 3:
                break
    finally:
        flint.stop()
    prose = LlamaProcess(
        find_small_model(), CTX, folder / "prose.log", extra_args=[*files.llama_args()[:3], *SERVER_ARGS]
    )
    prose.start(120)
    try:
        status, body = post(prose.url, request(0))
        if shape_of(status, body) == SHAPES[3]:
            found[SHAPES[3]] = body
    finally:
        prose.stop()
    return found


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        bodies = capture(Path(tmp))
    STORED.parent.mkdir(parents=True, exist_ok=True)
    STORED.write_text(json.dumps(bodies, indent=1) + "\n")
    print(f"{STORED}: {', '.join(bodies)}")
