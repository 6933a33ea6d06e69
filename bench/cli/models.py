"""`bench models`: the configured hub models fetched into the shared cache ahead of the first bench."""

from __future__ import annotations

import argparse

from bench.cli.options import Subparsers, add_command, config_flag, settings


def models(args: argparse.Namespace) -> int:
    from bench.llama.fetch import command

    return command(settings(args))


def add(sub: Subparsers) -> None:
    text = "fetch the configured hub models into the shared cache ahead of time"
    config_flag(add_command(sub, "models", models, text))
