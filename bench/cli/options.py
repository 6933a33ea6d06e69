"""What the commands share: the parsing of lists, the flags several of them take, and the one place where flags
become settings (`settings()`: the config model validates them; argparse only splits text into lists and numbers)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from bench.config import SETTINGS, BenchConfig, load_config
from bench.errors import ConfigError
from bench.setting_types import SANDBOX_KINDS, window_tokens

DEFAULT_CONFIG = "bench.yaml"
CONFIG_VARIABLE = "AGENTBENCH_CONFIG"  # the settings file when --config is not given (bench/environment.py's prefix)
SANDBOX_METAVAR = "|".join(SANDBOX_KINDS)
Subparsers = Any  # argparse's _SubParsersAction, private in typeshed's sense: only add_parser is used
Function = Callable[[argparse.Namespace], int]


def csv_list(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):  # `--ctx 4096,,8192` is a typo, never "4096 and 8192"
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item: separate the values by single commas")
    return parts


def ctx_list(text: str) -> list[int]:
    """`4096,8192` or as llama.cpp's users write windows, `4k,8k` (bench.setting_types.window_tokens)."""
    windows = [window_tokens(part) for part in csv_list(text)]
    try:
        return [int(window) for window in windows]  # type: ignore[call-overload]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected context sizes such as 4096,8192 or 4k,8k, got {text!r}") from e


def devices(text: str) -> str | list[str]:
    return "all" if text.strip() == "all" else csv_list(text)


def settings(args: argparse.Namespace) -> BenchConfig:
    """The one place flags become settings: the --config file (bench.yaml when there is one), then every flag named
    after a setting that was given, validated by the config model."""
    path = Path(getattr(args, "config", DEFAULT_CONFIG))
    if not path.exists() and str(path) != DEFAULT_CONFIG:
        raise ConfigError(f"config file {path} not found")
    given = {name: value for name in SETTINGS if (value := getattr(args, name, None)) not in (None, "")}
    try:
        return load_config(path if path.exists() else None, given)
    except ConfigError as e:
        from bench.run.spelling import setting_refused

        respelled = setting_refused(e.setting, given[e.setting], e.reason) if e.setting in given else None
        if respelled is None:
            raise
        raise ConfigError(respelled) from None


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors name what the user typed: under make bench its variables (CTX), not the flags
    of bench run (--ctx) that the Makefile turned them into."""

    def error(self, message: str) -> NoReturn:
        from bench.run.spelling import MAKE_OPTIONS, from_make, in_make_terms

        if not from_make():
            super().error(message)
        self.exit(2, f"make bench: {in_make_terms(message)} ({MAKE_OPTIONS})\n")


def verbosity_flags(parser: argparse.ArgumentParser, *, after: bool = True) -> None:
    """-v and -q, before the command (`bench -v run`) and after it (`bench run -v`): main() adds them up."""
    suffix = "_after" if after else ""
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, dest=f"verbose{suffix}", help="more diagnostics on stderr (debug)"
    )
    parser.add_argument(
        "-q", "--quiet", action="count", default=0, dest=f"quiet{suffix}", help="only warnings and errors on stderr"
    )


def verbosity(args: argparse.Namespace) -> int:
    after = getattr(args, "verbose_after", 0) - getattr(args, "quiet_after", 0)
    return int(args.verbose - args.quiet + after)


def add_command(sub: Subparsers, name: str, function: Function, text: str) -> argparse.ArgumentParser:
    """A command's parser, with its help, the function that runs it, and -v/-q."""
    found: argparse.ArgumentParser = sub.add_parser(name, help=text, description=text)
    found.set_defaults(function=function)
    verbosity_flags(found)
    return found


def json_flag(found: argparse.ArgumentParser) -> None:
    """For the commands that report: one JSON document on stdout (its schema in docs/json.md) rather than text."""
    found.add_argument("--json", action="store_true", help="print one JSON document (docs/json.md) instead of text")


def skip_bad_rows_flag(found: argparse.ArgumentParser) -> None:
    """For the commands that read results: rows with a bad cell left out and counted, rather than refused."""
    found.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="leave out rows with a bad cell (a warning counts them) rather than refuse the file",
    )


def config_flag(found: argparse.ArgumentParser) -> None:
    found.add_argument(
        "--config",
        default=os.environ.get(CONFIG_VARIABLE) or DEFAULT_CONFIG,
        help=f"settings file (default: ${CONFIG_VARIABLE}, else bench.yaml if there is one)",
    )


def ctx_flag(found: argparse.ArgumentParser, text: str) -> None:
    found.add_argument("--ctx", type=ctx_list, help=text)


def root_flag(found: argparse.ArgumentParser) -> None:
    found.add_argument(
        "--fixtures-root", metavar="DIR", help="folder holding fixtures/ and hidden_tests/ (default: the checkout)"
    )


def output_file(text: str, flag: str) -> Path:
    """A file a command writes, checked before any work: not a folder, in a folder that exists (made) and that this
    user may write; else one line naming the flag (ConfigError)."""
    path = Path(text)
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder: name a file in it, e.g. {path / 'report.html'}")
    _writable_folder(path.parent, flag, path)
    return path


def output_folder(text: str, flag: str) -> Path:
    """A folder a command writes into, made when missing; one line naming the flag when it cannot be."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {path} is a file: name a folder")
    _writable_folder(path, flag, path)
    return path


def _writable_folder(folder: Path, flag: str, path: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = f"cannot make the folder {folder} ({e.strerror})"
        raise ConfigError(f"{flag} {path}: {why}; choose another path") from None
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{flag} {path}: {folder} is not writable by this user; choose another path")
