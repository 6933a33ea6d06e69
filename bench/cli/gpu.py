"""Once per GPU host: `bench gpu-check` (NVML, the sampler, compose, one real run) and `bench gpu-image` (the CUDA
llama-server image from the pinned source)."""

from __future__ import annotations

import argparse

from bench import ROOT
from bench.cli.options import Subparsers, add_command, config_flag, ctx_flag, settings


def gpu_check(args: argparse.Namespace) -> int:
    from bench.gpu_check import command

    return command(settings(args), args.config)


def gpu_image(args: argparse.Namespace) -> int:
    from bench.llama.cuda_image import command

    return command(ROOT)


def add(sub: Subparsers) -> None:
    one = add_command(sub, "gpu-check", gpu_check, "once per GPU host: NVML, the sampler, compose, one real run")
    config_flag(one)
    ctx_flag(one, "context size of the real run (default: the settings' first)")
    text = "build the CUDA llama-server image from the pinned llama.cpp source, once per host"
    add_command(sub, "gpu-image", gpu_image, text)
