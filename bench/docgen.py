"""`python -m bench.docgen` (`make docs`): the pages made from the models, never edited by hand.

docs/results.md comes from the row model (bench/results/row.py, through bench/results/docs.py) and docs/config.md
from the config model's field docstrings (bench/config.py), with each key's default, what it allows, its `bench run`
flag and its environment variable. tests/test_docgen.py fails when a committed page is not what this writes, or
when a setting or a column has no doc.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.cli import build_parser
from bench.config import BenchConfig, Group
from bench.environment import variables
from bench.results import docs as results_docs

CONFIG_PAGE = ROOT / "docs" / "config.md"

CONFIG_INTRO = """\
# Configuration

<!-- Generated from bench/config.py by `python -m bench.docgen` (`make docs`): edit the model, not this page. -->

Each setting comes from the first of these that sets it, one rule for every setting:

1. the command line: the flags of `bench run` (below);
2. the environment: `AGENTBENCH_<KEY>` (`AGENTBENCH_REPS=3`, `AGENTBENCH_CTX=4096,8192`,
   `AGENTBENCH_SAMPLING='{temperature: 0}'`), or an older name kept as its alias (below: `FLINT_URL`, `JEFF_URL`,
   `GPU_DEVICE` and the other variables compose.yaml reads); the prefixed name wins over its alias, and an empty
   variable counts as unset. A variable's text is read as its setting's type asks: as it is for text, else as YAML
   reads it, and a comma list for a list;
3. `bench.yaml` (or `--config FILE`, or the file `AGENTBENCH_CONFIG` names; `experiments/` holds examples);
4. the defaults (below).

`make bench` passes its variables as flags: `CTX=`, `PRESETS=`, `FIXTURES=`, `REPS=`, `MAX_STEPS=`, `SANDBOX=`,
`SERVERS=`, `OUT=`, `CONFIG=`, `RESUME=1`, `SHARD=`, given on make's command line only (`make bench CTX=4096`). One
merely exported in the shell (`export OUT=...`) changes nothing: make says it ignores it; export the prefixed name
(`AGENTBENCH_OUT`) to set a setting from the environment. make prints where each value it passes came from.

Every value is type- and range-checked when the settings load: a mistyped key or a wrong value is one line naming
where it came from, the key, the value and what is allowed (e.g. `bench.yaml: reps = '3' is not allowed: input
should be a valid integer`, `$AGENTBENCH_REPS: ...`), before anything runs. An explicit `ctx` or `presets` (flag or
variable) replaces `groups`.
"""

CONFIG_OUTRO = """\
## Presets and fixtures

**Presets** are the agent's published versions: `part2` (no clearing; a cut answer is taken as the answer),
`clearing` (clears old material past `clear_at` of the window), `part3` (clearing, and a cut answer is dropped and
the model told), `part3+` (part3 with what the article left open: clearing before a request would pass the
threshold, older done-check output cleared too, a done check planted files cannot fool), `strict` (as part3+, and
done also needs a changed non-test file and a new test), `late` (as part3+, clearing only past 3/4 of the window:
what `bench replay` found cheapest on the suite's real traces). See [agent.md](agent.md#presets).

**Fixtures**: `todo_repo` (a JSON-backed todo app; add due dates and an overdue listing, with tests; 2 of 6 hidden
tests pass on the untouched code) and `ledger_repo` (a 45K-token bookkeeping app whose small change needs more
reading than a 32K window holds; 2 of 8). `bench fixtures check` verifies every fixture against its
hidden tests and reference solution. Adding one: [fixtures.md](fixtures.md).

## Other environment variables

- `AGENTBENCH_BASE_IMAGE`: the base image of both Dockerfiles, for machines without a registry (default
  `python:3.11-slim-bookworm` for the sandbox, `debian:bookworm-slim` for the CPU llama-server).
- `LLAMA_SERVER`, `SMALL_MODEL`: another llama-server binary or GGUF file for the embedded servers.
- `MODEL_ENDPOINT` / `HF_ENDPOINT`, `HF_TOKEN`: llama.cpp's own: another hub or a mirror, a token for gated
  repositories.
- `AGENTBENCH_STATE_DIR`: where bench instances keep their state files (default `~/.cache/agent-bench/instances`).
- `AGENTBENCH_COMPOSE`: which Compose to run (`"docker compose"` or a path).
- `CI`: `true` makes a test whose real part is missing fail instead of skip.
"""


def allowed(schema: dict[str, Any]) -> str:
    """What a JSON-schema property allows, in a few words."""
    if "anyOf" in schema:
        return " or ".join(allowed(member) for member in schema["anyOf"])
    if "enum" in schema:
        return ", ".join(f"`{value}`" for value in schema["enum"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {allowed(schema.get('items', {}))}"
    if kind == "null":
        return "null"
    bounds = [f"≥ {schema['minimum']}" if "minimum" in schema else "", f"> {schema.get('exclusiveMinimum')}"]
    bounds = [bounds[0], bounds[1] if "exclusiveMinimum" in schema else ""]
    bounds.append(f"≤ {schema['maximum']}" if "maximum" in schema else "")
    bounds.append(f"`{schema['pattern']}`" if "pattern" in schema else "")
    return " ".join([str(kind), *(b for b in bounds if b)])


def run_flags() -> dict[str, str]:
    """Setting name -> the `bench run` flag that overrides it."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    run = commands.choices["run"]
    return {a.dest: a.option_strings[-1] for a in run._actions if a.option_strings and a.dest != "help"}  # noqa: SLF001


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def settings_table(
    model: type[BenchConfig] | type[Group], flags: dict[str, str], environment: bool = True
) -> list[str]:
    properties = model.model_json_schema()["properties"]
    lines = ["| key | default | allowed | flag, variables | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        default = json.dumps(field.default, ensure_ascii=False) if not field.is_required() else "required"
        where = ", ".join(f"`{w}`" for w in (flags.get(name), *(variables(name) if environment else ())) if w)
        cells = [f"`{name}`", f"`{default}`", allowed(properties[name]), where, one_line(field.description)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def render_config() -> str:
    flags = run_flags()
    out = [CONFIG_INTRO, "## Settings", "", *settings_table(BenchConfig, flags), ""]
    out += [
        "## A block of `groups`",
        "",
        one_line(Group.__doc__),
        "",
        *settings_table(Group, {}, environment=False),
        "",
    ]
    return "\n".join([*out, CONFIG_OUTRO])


PAGES = {CONFIG_PAGE: render_config, results_docs.PAGE: results_docs.render}


def main() -> int:
    for page, render in PAGES.items():
        page.write_text(render(), encoding="utf-8")
        print(f"wrote {Path(page).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
