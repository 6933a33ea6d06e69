"""The generated pages are what `python -m bench.docgen` writes now, and every setting and column has a doc to show.

A new setting or column without a doc, or a model changed without `make docs`, fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.config import BenchConfig, Group
from bench.docgen import PAGES, allowed, render_config
from bench.results.schema import MODEL


@pytest.mark.parametrize("page", sorted(PAGES), ids=lambda page: page.name)
def test_a_generated_page_is_up_to_date(page: Path) -> None:
    assert page.read_text(encoding="utf-8") == PAGES[page](), f"{page.name} is out of date: run make docs"


@pytest.mark.parametrize("model", [BenchConfig, Group])
def test_every_setting_has_a_doc(model: type[BenchConfig] | type[Group]) -> None:
    undocumented = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert not undocumented, f"add a docstring under these fields of {model.__name__}: {undocumented}"


def test_every_column_has_a_doc() -> None:
    assert not [c.name for c in MODEL if not c.doc.strip()]


def test_the_config_page_names_each_setting_with_its_flag_and_variable() -> None:
    page = render_config()
    for name in BenchConfig.model_fields:
        assert f"| `{name}` |" in page
    assert "| `reps` | `1` | integer ≥ 1 ≤ 1000 | `--reps`, `AGENTBENCH_REPS` |" in page
    assert '| `gpu_device` | `"0"` |' in page and "`AGENTBENCH_GPU_DEVICE`, `GPU_DEVICE` |" in page
    assert "1. the command line" in page and "2. the environment" in page and "3. `bench.yaml`" in page


def test_allowed_reads_ranges_choices_and_options() -> None:
    assert allowed({"type": "number", "exclusiveMinimum": 0, "maximum": 1}) == "number > 0 ≤ 1"
    assert allowed({"enum": ["a", "b"]}) == "`a`, `b`"
    assert allowed({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}) == "integer ≥ 1 or null"
