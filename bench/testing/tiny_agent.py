"""A tiny agent kind of a test's own: the whole of what a new agent needs, one module (this) and one registry line
(the test's `monkeypatch.setitem(KINDS, "tiny", tiny(...))`).

Its process asks the model twice through whatever URL it is given, checks that /metrics is refused to it, tries
`probe` (host:port, e.g. Flint itself) directly and says whether it connected, and writes the solution's files into
the repository: done when it exits 0. Standard library only, so it runs in the sandbox image as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place

PROGRAM = r"""
import json, os, pathlib, socket, sys, urllib.error, urllib.request
flint, repo, task = sys.argv[1:4]
messages = [{"role": "user", "content": pathlib.Path(task).read_text()}]
for _ in range(2):
    body = json.dumps({"messages": messages, "max_tokens": 64}).encode()
    ask = urllib.request.Request(flint + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(ask, timeout=60))
    messages += [answer["choices"][0]["message"], {"role": "user", "content": "go on"}]
try:
    urllib.request.urlopen(flint + "/metrics", timeout=30)
    sys.exit("/metrics answered: the proxy let it through")
except urllib.error.HTTPError as e:
    print("/metrics refused:", e.code)
if os.environ.get("TINY_PROBE"):
    host, port = os.environ["TINY_PROBE"].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        print("direct: connected")
    except OSError as e:
        print("direct:", type(e).__name__)
for name, text in json.loads(os.environ["TINY_FILES"]).items():
    pathlib.Path(repo, name).write_text(text)
"""


def tiny(files: dict[str, str], probe: str = "") -> AgentKind:
    def launch(place: Place, settings: AgentSettings) -> Launch:
        env = {"TINY_FILES": json.dumps(files), **({"TINY_PROBE": probe} if probe else {})}
        return Launch([place.python, "-c", PROGRAM, place.flint_url, place.repo, place.task_file], env)

    return scripted_kind("tiny", "it exits 0", launch)


ENDLESS = r"""
import json, sys, time, urllib.error, urllib.request
flint = sys.argv[1]
tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
messages = [{"role": "user", "content": "never stop"}]
while True:  # each step of its main thread (with tools), then a side request without them, as opencode's summary
    for body in ({"messages": messages, "tools": tools}, {"messages": [{"role": "user", "content": "sum up"}]}):
        data = json.dumps({**body, "max_tokens": 16}).encode()
        ask = urllib.request.Request(flint + "/v1/chat/completions", data, {"Content-Type": "application/json"})
        try:
            answer = json.load(urllib.request.urlopen(ask, timeout=60))
        except urllib.error.HTTPError as e:
            print("refused:", e.code, e.read()[:200], flush=True)
            time.sleep(0.05)  # and asks again, as an agent that takes no refusal for an end
            continue
        if "tools" in body:
            messages += [answer["choices"][0]["message"], {"role": "user", "content": "go on"}]
"""


def endless() -> AgentKind:
    """An agent that never ends of itself: its main thread asks with a tool, each step followed by a side request
    without tools, and a refused request is asked again. Only the bench's step limit (the recording proxy's) or the
    run's time limit ends it."""

    def launch(place: Place, settings: AgentSettings) -> Launch:
        return Launch([place.python, "-c", ENDLESS, place.flint_url])

    return scripted_kind("endless", "never", launch)


def scripted_kind(name: str, done: str, launch: Callable[[Place, AgentSettings], Launch]) -> AgentKind:
    """A kind of the tests' own: chat completions, nothing to install, version 0.1."""
    return AgentKind(
        name=name, dialect="chat-completions", done=done, install=Install(), version=lambda: "0.1", launch=launch
    )
