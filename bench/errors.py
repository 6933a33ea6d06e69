"""Errors a bench user sees as one line, with what to do about it.

Anything else that escapes is a bug and keeps its traceback.

    BenchError                  the CLI prints "bench: <message>" and exits 2
      ConfigError               bench.yaml or a command-line value is wrong
      PrerequisiteError         something to install or start is missing (llama-server, model, Docker, GPU)
      ServerStartError          a llama-server did not become healthy, or serves the wrong context size
        ServerPlacementError    a llama-server started on a GPU came up on the CPU or on another card
      SandboxError              a sandbox could not be created or started
      FixtureError              a fixture is broken or unknown
      ScoringError              grading could not run (not: the agent's tests failed)
      ResultsError              a results file cannot be read, or mixing rows from different inputs was refused
        DiskError               a file could not be written (full disk): the bench ends, its rows intact

    Terminated                  SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (exit 143 rather than 130)
"""


class BenchError(Exception):
    """A problem the user can fix; the message says how."""


class ConfigError(BenchError):
    """bench.yaml or a command-line value is wrong; `setting` and `reason` where it is one given setting's value."""

    def __init__(self, message: str, setting: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.setting, self.reason = setting, reason


class PrerequisiteError(BenchError):
    """Something the bench needs is not installed or not running."""


class ServerStartError(BenchError):
    """A llama-server did not come up healthy with the requested context size."""


class ServerPlacementError(ServerStartError):
    """A llama-server the bench started on a GPU is not on its card (on the CPU, or seeing other cards): the run that
    was to use it fails as infra_error, saying so, and the bench stops (the next start would come up the same)."""


class SandboxError(BenchError):
    """A sandbox (container or temp dir) could not be prepared or started."""


class FixtureError(BenchError):
    """A fixture is missing, malformed, or fails `bench fixtures check`."""


class ScoringError(BenchError):
    """Grading could not run at all (a failing hidden test is a score, not this error)."""


class ResultsError(BenchError):
    """A results CSV is unreadable, or a run would mix rows from different inputs into one file."""


class Terminated(KeyboardInterrupt):
    """The bench got SIGTERM (a CI timeout, `kill`): it stops like Ctrl-C, keeping its rows, and exits 143."""


def missing_dependency(error: ModuleNotFoundError, python: str) -> str | None:
    """The one line for a Python that lacks a package the bench needs (the system's, before `make setup`); None when
    the missing module is one of our own, which is a bug and keeps its traceback."""
    if (error.name or "").split(".")[0] in ("bench", "agent", ""):
        return None
    return (
        f"this Python ({python}) lacks {error.name}, which the bench needs: run `make setup` in the checkout, then "
        "`.venv/bin/bench ...` (or `bench ...` with .venv activated)"
    )
