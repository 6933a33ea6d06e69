"""`python -m bench.results.docs`: write docs/results.md from the row model (bench.results.row.ResultRow).

The page is generated, never edited by hand: a test checks that the committed file is what this writes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from bench.results.column import KINDS, Column
from bench.results.schema import AGENT_STOP_REASONS, INFRA_STOP_REASON, MODEL

PAGE = Path("docs/results.md")  # in the checkout

INTRO = f"""\
# Results columns

<!-- Generated from bench/results/row.py by `make docs` (`python -m bench.docgen`): edit the model, not this page. -->

A results CSV holds one row per run, its columns in this order. **An empty cell means not measured, never 0**; the
reason is in `error` or `gpu_mem_method`. Times are seconds, memory MiB (2^20 bytes, rounded down), tokens as the
server counted them. Lists are `;`-separated, booleans `true`/`false`. A run *completed* when `stop_reason` is
`done` and `hidden_passed == hidden_total`.

Stop reasons: {", ".join(f"`{r}`" for r in AGENT_STOP_REASONS)} (the agent's), or
`{INFRA_STOP_REASON}`: the run failed outside the agent, so it measured nothing about the agent and is left out of
comparisons.

Keys: **names** and **setup** say which configuration a run belongs to (`compare`, `report` and `history` never pool
runs that differ in one); **resume**: a planned run whose values in these match a row is already measured
(`--resume` skips it); **per file**: one value across a results file (a bench refuses to add other values to it).
**better**: the direction in which `compare` and `history` call a change an improvement.
"""

OUTRO = """\
## Files from older versions

Readers read every file by column name: a column a file lacks reads as not measured, except these, which read as
the value every row of such a file had: {added}. A bench appends only to a file with exactly the current columns;
`bench migrate OLD.csv` rewrites an older file under them (the original is kept as `OLD.csv.bak`).
"""


def keys_of(column: Column) -> str:
    keys = [column.compare or "", "resume" if column.resume else "", "per file" if column.per_file else ""]
    return ", ".join(key for key in keys if key)


def table(columns: Iterable[Column]) -> list[str]:
    lines = ["| column | type | unit | better | keys | meaning |", "| --- | --- | --- | --- | --- | --- |"]
    for c in columns:
        doc = c.doc.replace("|", "\\|")
        lines.append(f"| `{c.name}` | {KINDS[c.kind]} | {c.unit} | {c.better or ''} | {keys_of(c)} | {doc} |")
    return lines


def render() -> str:
    added = ", ".join(f"`{c.name}` (`{c.before}`)" for c in MODEL if c.before is not None) or "none"
    out = [
        INTRO,
        "## The contract",
        "",
        "Other tools read these by name and position: they come first, in this order.",
        "",
    ]
    out += [*table(c for c in MODEL if c.contract), "", "## Provenance and detail", ""]
    out += [*table(c for c in MODEL if not c.contract), "", OUTRO.format(added=added)]
    return "\n".join(out)


def main() -> int:
    from bench import ROOT  # run as a script: the checkout is the one this module is in

    (ROOT / PAGE).write_text(render(), encoding="utf-8")
    print(f"wrote {ROOT / PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
