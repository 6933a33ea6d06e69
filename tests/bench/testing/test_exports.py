"""bench.testing names its doubles (`__all__`), and each one is importable from it, as the object its module
defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import bench.testing

MODULES = [
    "fake_llama",
    "fake_model",
    "fake_pynvml",
    "hub_standin",
    "host_targets",
    "fakes",
    "agents",
    "tiny_agent",
]


@pytest.mark.parametrize("name", bench.testing.__all__)
def test_each_double_is_importable_from_the_package(name: str) -> None:
    module = importlib.import_module(f"bench.testing.{bench.testing.EXPORTS[name]}")
    assert getattr(bench.testing, name) is getattr(module, name)
    namespace: dict[str, object] = {}
    exec(f"from bench.testing import {name}", namespace)
    assert namespace[name] is getattr(module, name)


def test_every_public_class_of_the_doubles_is_exported() -> None:
    """A class a double's module defines for its users (no leading underscore, defined there) is in __all__."""
    missing = []
    for module_name in MODULES:
        module = importlib.import_module(f"bench.testing.{module_name}")
        for name, value in vars(module).items():
            own_class = isinstance(value, type) and value.__module__ == module.__name__
            if own_class and not name.startswith("_") and not name.startswith("NVML"):
                missing += [] if name in bench.testing.__all__ else [f"{module_name}.{name}"]
    assert missing == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'FakeCloud'"):
        bench.testing.FakeCloud  # noqa: B018


@pytest.mark.processes  # a fresh interpreter: this one has imported the doubles already
def test_importing_the_package_loads_no_double() -> None:
    """Lazy: `import bench.testing` alone does not import the doubles (fakes.py loads the whole runner)."""
    code = "import sys, bench.testing; print(sorted(m for m in sys.modules if m.startswith('bench.testing.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
