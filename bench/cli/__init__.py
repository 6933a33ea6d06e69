"""`bench <command>`: parse arguments, call the function that does the work, print one line on errors.

`python -m bench` runs the same main() (bench/__main__.py, which first checks that this Python has the bench's
dependencies). Each command is a module of this package that declares its own options and turns them into typed
settings (a BenchConfig, or the options object of the module doing the work), imported inside its function so that
a command loads only what it needs: `bench run` never loads matplotlib. Settings flags are named after the settings
(bench.config.BenchConfig) and become settings in one place, bench.cli.options.settings().
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import traceback
from collections.abc import Sequence

from bench.cli import (
    agents,
    compare,
    fixtures,
    gpu,
    history,
    merge,
    migrate,
    models,
    predictions,
    replay,
    report,
    run,
    score,
    submit,
    updown,
    view,
)
from bench.cli.options import Parser, settings, verbosity, verbosity_flags
from bench.cli.version import Version
from bench.errors import BenchError, Terminated, missing_dependency
from bench.logs import configure_logging
from bench.results.disk import disk_error, is_disk_error

__all__ = ["EXIT_BUG", "EXIT_ERROR", "EXIT_FAILED", "EXIT_OK", "build_parser", "main", "settings"]
log = logging.getLogger(__name__)
# In the order `--help` lists them.
COMMANDS = [run, merge, updown, models, gpu, compare, history, report, replay, migrate, fixtures, score, view]
COMMANDS += [predictions, submit, agents]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="bench", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action=Version)
    verbosity_flags(parser, after=False)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return parser


# Exit statuses (docs/running.md, "Exit statuses"): each means one thing, whatever the command.
EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_BUG = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM


def main(argv: Sequence[str] | None = None) -> int:
    """The command's own status (0; 1: runs ended in infra_error, a gate failed); 2 a one-line error; 3 a bug in
    the bench (its traceback); 130 Ctrl-C, 143 SIGTERM."""
    args = build_parser().parse_args(argv)
    configure_logging(verbosity(args))
    try:
        return int(args.function(args))
    except BenchError as e:
        log.error("%s", e)
        return EXIT_ERROR
    except BrokenPipeError:  # `bench compare ... | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt as e:
        how = "terminated" if isinstance(e, Terminated) else "interrupted"
        to_continue = getattr(e, "to_continue", "")  # bench run's: the command that goes on where it stopped
        log.warning("%s; rows already written are kept%s", how, f"; to continue: {to_continue}" if to_continue else "")
        return EXIT_SIGTERM if isinstance(e, Terminated) else EXIT_SIGINT
    except ModuleNotFoundError as e:  # a command's own imports, in a Python without the bench's dependencies
        hint = missing_dependency(e, sys.executable)
        if hint is None:
            return _bug()
        log.error("%s", hint)
        return EXIT_ERROR
    except OSError as e:
        if not is_disk_error(e):
            return _bug()
        log.error("%s", disk_error(e))
        return EXIT_ERROR
    except Exception:
        return _bug()


def _bug() -> int:
    """Anything else is a bug: its traceback, and a status of its own (1 would read as "some runs failed")."""
    traceback.print_exc()
    log.error("this is a bug in the bench: please report it with the traceback above")
    return EXIT_BUG
