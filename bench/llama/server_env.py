"""What a host llama-server's environment says beyond its libraries, so that a row does not depend on the host.

- Offline once its model is here: a local file, or a hub model already in the shared cache (after `make models`).
  llama.cpp otherwise asks the hub for the repository's listing at every start, which behind a firewall that drops
  packets stalls the start for minutes; LLAMA_ARG_OFFLINE=1 (`--offline`, common/arg.cpp) uses the cache alone.
- No user configuration: llama.cpp applies /etc/llama.cpp/config.ini, then ${XDG_CONFIG_HOME:-~/.config}/llama.cpp/
  config.ini before its flags (common/arg.cpp common_params_apply_system_config). XDG_CONFIG_HOME points at an
  empty folder of the bench's, and a system-wide file, which no variable turns off, is refused.
- Pinned to one card (bench.llama.gpu_pin) when it runs on the GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.errors import PrerequisiteError
from bench.llama.gpu_pin import GpuPin
from bench.llama.hub import HubRef, cached_model

SYSTEM_CONFIG = Path("/etc/llama.cpp/config.ini")


def is_offline_ready(model: Path | HubRef, cache: Path) -> bool:
    """Whether the server can start without the hub: the model is a file, or already fetched into `cache`."""
    return not isinstance(model, HubRef) or cached_model(cache, model) is not None


def offline_environment(models: list[Path | HubRef], cache: Path) -> dict[str, str]:
    """LLAMA_ARG_OFFLINE=1 when every model is here already, else nothing (a first start fetches)."""
    return {"LLAMA_ARG_OFFLINE": "1"} if all(is_offline_ready(m, cache) for m in models) else {}


def empty_config_home(system_config: Path = SYSTEM_CONFIG) -> dict[str, str]:
    """XDG_CONFIG_HOME for a server that reads no user's config.ini; a system-wide one is refused in one line."""
    if system_config.exists():
        raise PrerequisiteError(
            f"{system_config} exists, and every host llama-server applies it before its flags, so rows would depend "
            f"on it: move it away, or run the servers in containers (servers: compose)"
        )
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "llama-config-home"
    home.mkdir(parents=True, exist_ok=True)
    leftovers = [p for p in home.rglob("*") if p.is_file()]
    for stray in leftovers:  # the folder is the bench's own: whatever appears in it is not a user's choice
        stray.unlink()
    return {"XDG_CONFIG_HOME": str(home)}


def host_server_environment(model: Path | HubRef, cache: Path, pin: GpuPin | None = None) -> dict[str, str]:
    """The variables one host llama-server gets: offline when it can be, no config home, and its card (on a GPU)."""
    return offline_environment([model], cache) | empty_config_home() | (pin.cuda_environment() if pin else {})
