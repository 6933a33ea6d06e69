"""The documentation's code samples run as written: every ```python block in README.md and docs/*.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def samples() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for number, code in enumerate(BLOCK.findall(page.read_text()), start=1):
            found.append((f"{page.relative_to(ROOT)}#{number}", code))
    return found


def test_the_docs_have_samples_to_run() -> None:
    assert samples()


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(("where", "code"), samples(), ids=[where for where, _ in samples()])
def test_a_documented_sample_runs(where: str, code: str, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{where}:\n{done.stderr[-2000:]}"
