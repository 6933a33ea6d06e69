"""A tiny agent kind of a test's own: the whole of what a new agent needs, one module (this) and one registry line
(the test's `monkeypatch.setitem(KINDS, "tiny", TINY)`).

Its process asks the model twice through whatever URL it is given, checks that /metrics is refused to it, and copies
a solution over the repository: done when it exits 0.
"""

from __future__ import annotations

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place

PROGRAM = r"""
import json, pathlib, shutil, sys, urllib.error, urllib.request
flint, repo, task, solution = sys.argv[1:5]
messages = [{"role": "user", "content": pathlib.Path(task).read_text()}]
for _ in range(2):
    body = json.dumps({"messages": messages, "max_tokens": 64}).encode()
    ask = urllib.request.Request(flint + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(ask, timeout=30))
    messages += [answer["choices"][0]["message"], {"role": "user", "content": "go on"}]
try:
    urllib.request.urlopen(flint + "/metrics", timeout=30)
    sys.exit("/metrics answered: the proxy let it through")
except urllib.error.HTTPError as e:
    print("/metrics refused:", e.code)
for name in ("todo.py", "test_due.py"):
    shutil.copy(pathlib.Path(solution, name), pathlib.Path(repo, name))
"""


def tiny(solution: str) -> AgentKind:
    def launch(place: Place, settings: AgentSettings) -> Launch:
        return Launch([place.python, "-c", PROGRAM, place.flint_url, place.repo, place.task_file, solution])

    return AgentKind(
        name="tiny",
        dialect="chat-completions",
        done="it exits 0",
        install=Install(),
        version=lambda: "0.1",
        launch=launch,
    )
