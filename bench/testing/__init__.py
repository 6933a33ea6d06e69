"""Test doubles shipped with the bench, for its own tests and for anyone extending it: a scripted llama-server,
a fake NVML, a stand-in model hub, listeners for isolation probes, fakes of the Servers and Sandbox protocols
(fakes.py), the article's agent as a sandbox test starts it (agents.py), and two tiny agent kinds (tiny_agent.py:
one done in two steps, one that never ends of itself). The doubles of engines the suite alone plays (a one-node
Slurm cluster, a kubelet) are in tests/.

    from bench.testing import FakeLlama, FakeNvml

Each name is imported when first asked for, so that taking one double does not load the others' dependencies.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module of this package that defines it
EXPORTS = {
    "FakeLlama": "fake_llama",
    "ScriptedServer": "fake_model",
    "FakeNvml": "fake_pynvml",
    "FakeDevice": "fake_pynvml",
    "State": "fake_pynvml",
    "HubStandIn": "hub_standin",
    "HubFile": "hub_standin",
    "Listener": "host_targets",
    "listeners_on_every_host_address": "host_targets",
    "FakeServers": "fakes",
    "FakeSandboxes": "fakes",
    "FakeSandbox": "fakes",
    "ScriptedRun": "fakes",
    "FakeFactory": "fakes",
    "given_kind": "fakes",
    "article_run": "agents",
    "tiny": "tiny_agent",
    "endless": "tiny_agent",
}
__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})
