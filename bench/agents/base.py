"""What an agent kind is: how it enters the sandbox image, how it is started on a task, which API it speaks, what
"done" means to it, and its version.

A sandbox starts any kind alike: it says where things are for the agent (Place: the repository, the task file, the
out folder, the model servers' URLs as the agent reaches them), and the kind answers with the command line and the
environment (Launch). What the bench fixes for the run (window, step limit, the article's preset and clearing
settings) comes in AgentSettings, so a kind derives its own window and compaction settings from `ctx`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

CLOSED_PORT = "http://127.0.0.1:9"  # where any request not meant for the model goes: refused at once


@dataclass(frozen=True)
class Place:
    """Where one run's things are, as the agent sees them (host paths in the local sandbox, /repo in a container)."""

    python: str  # the interpreter that runs a Python agent there: sys.executable here, python3 in the image
    repo: str
    task_file: str  # the task file's path
    out_dir: str  # the agent's trace, or its own log, goes here
    flint_url: str  # the agent's model: Flint itself (article) or the recording proxy in front of it
    jeff_url: str | None
    command_user: str | None = None  # "UID:GID" the model's commands run as (the docker sandbox); None: the agent's
    installed: str = ""  # the folder of the kind's own packages (a virtual environment), where it has any


@dataclass(frozen=True)
class Launch:
    """The agent's process: its command line and the environment it adds."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentSettings:
    """What the bench fixes for a run, for the kind to turn into its own flags."""

    preset: str  # the article's preset; other kinds: "" (they have none)
    ctx: int
    max_steps: int
    keep: int
    clear_at: float
    sampling: str  # JSON with sorted keys, as the row records it
    retries: int
    retry_delay_s: float
    request_timeout_s: float
    jeff_timeout_s: float
    jeff_steps: int  # the article's jeff-first: the steps Jeff takes before Flint
    test_command: str = ""  # a fixture of another language than Python: its test command, for the done check
    test_patterns: tuple[str, ...] = ()  # and its test files' patterns: the tests the agent must leave as they are


@dataclass(frozen=True)
class Install:
    """How a kind enters the sandbox: nothing beyond the sandbox image (the article's agent is in it), or pinned
    packages installed offline into an image built from it (bench/containers/agent_image.py), or, for the local
    sandbox, into a virtual environment of its own (bench/agents/install.py)."""

    pip: tuple[str, ...] = ()  # "name==version"
    npm: tuple[str, ...] = ()  # "name@version"


def answer_limit(ctx: int) -> int:
    """Tokens an answer may take, for the agents that ask for a limit: a quarter of the window, at most 2,048, so
    one answer never fills it."""
    return min(2048, ctx // 4)


def only_the_model(place: Place) -> dict[str, str]:
    """An agent's environment that sends any HTTP(S) it tries, other than to its model (the recording proxy), to a
    closed port: its fetches of its own (telemetry, updates, catalogues) fail closed in the local sandbox too, as they
    do on the docker sandbox's network."""
    model_host = urlsplit(place.flint_url).hostname or ""
    env = {name: CLOSED_PORT for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    return env | {"NO_PROXY": model_host, "no_proxy": model_host}


def exit_stop_reason(exit_code: int | None, timed_out: bool) -> str:
    """An agent's end from its exit status, as the article's contract reads its own: 0 done, else stopped without
    being done; killed (the run's time up, or a signal): interrupted."""
    if exit_code is None or timed_out:
        return "interrupted"
    return "done" if exit_code == 0 else "step_limit"


@dataclass(frozen=True)
class AgentKind:
    """One agent: the bench asks it everything it needs, and never tests its name."""

    name: str
    dialect: str  # the API it speaks to the model: chat-completions | responses | messages
    done: str  # what "done" is to this agent, in a line (docs/agents.md)
    install: Install
    version: Callable[[], str]  # the pinned package's version, or the article's source hash
    launch: Callable[[Place, AgentSettings], Launch]
    # Its figures come from its own event trace (the article's) or from the recording proxy's log (any other).
    own_trace: bool = False
    presets: tuple[str, ...] = ()  # the article's presets; a kind without presets is one column of the matrix
    # Why it cannot run here, in one line; None when it can. Called when `bench agents` lists it or a bench asks for it.
    unavailable: Callable[[], str | None] = lambda: None
    stop_reason: Callable[[int | None, bool], str] = exit_stop_reason  # its end, where it writes no trace
    notes: Mapping[str, str] = field(default_factory=dict)
    # The smallest window it can work in (its first request alone is near it), and why; a smaller ctx is refused.
    min_ctx: tuple[int, str] = (0, "")
    # Whether Flint forced to call tools serves it (SmolLM2, the CPU default: bench/llama/forced_tools.py). Its
    # template and grammar are the article agent's tools; a kind that writes its own calls gets errors from it.
    forced_tools: bool = False
    # Where a real run of it against llama-server passed on the project's own machine (two CPU cores, Qwen2.5-Coder),
    # or why none has yet: `bench agents` shows it beside its status.
    real_run: str = ""


@dataclass(frozen=True)
class AgentCommand:
    """One run's agent: its kind and the settings the bench fixed; a sandbox asks it for the Launch at its Place."""

    kind: AgentKind
    settings: AgentSettings
    extra_args: tuple[str, ...] = ()  # flags after the kind's own (a test's: `--approve no`), which they override

    def launch(self, place: Place) -> Launch:
        launch = self.kind.launch(place, self.settings)
        return Launch([*launch.argv, *self.extra_args], launch.env)
